package ledger

import (
	"encoding/json"
	"maps"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// requestKeyPrefix starts the keys of reservations made for objects
// without a name yet (RequestKey).
const requestKeyPrefix = "uid/"

// reservation is GPUs granted to an admitted workload whose pods the ledger
// has not (all) seen yet, so that admissions in quick succession, ahead of
// the informers, do not each see the same free quota. What counts of it is
// what the pods seen so far have not consumed (Ledger.consumed): applied.
type reservation struct {
	Reservation
	applied map[string]int
	// made is when this replica first held it; verified says the API
	// server was asked and has its object (Unverified).
	made     time.Time
	verified bool
}

// Reservation is one reservation as the ledger keeps it and as a shared
// ledger (package cluster) stores it: the tenant, the GPUs per resource
// granted, whether they are preemptible, and until when they count unless
// pods consume them. An entry with Owner set is a gang pod's claim of one
// of the pod slots of the admitted owner of that UID (ClaimGangPod), with
// no GPUs of its own: the owner's reservation holds them.
type Reservation struct {
	Tenant      string         `json:"tenant"`
	GPUs        map[string]int `json:"gpus"`
	Preemptible bool           `json:"preemptible"`
	Expires     time.Time      `json:"expires"`
	Owner       string         `json:"owner,omitempty"`
	// Generation is the generation of the stored object the reservation
	// was admitted for: 0 or 1 for a create, the next one for a change
	// of an admitted workload (an UPDATE raising its demand). A stored
	// version at least as new settles it (UpsertHold).
	Generation int64 `json:"generation,omitempty"`
	// Escrowed says this replica's grant of the tenant covers it
	// (SpendGrant): it is never stored on its own, and what it spends
	// goes back to the grant when it is released or, settled, stops
	// being shared.
	Escrowed bool `json:"-"`
}

// WorkloadKey names a workload for reservations: group/Kind/namespace/name.
// A pod's controller owner reference yields the same key as its owner.
func WorkloadKey(apiVersion, kind, namespace, name string) string {
	group := apiVersion
	for i := 0; i < len(apiVersion); i++ {
		if apiVersion[i] == '/' {
			group = apiVersion[:i]
			break
		}
	}
	if group == apiVersion && kind == "Pod" && apiVersion == "v1" {
		group = ""
	}
	return group + "/" + kind + "/" + namespace + "/" + name
}

// SplitWorkloadKey reads a WorkloadKey back: its group, kind, namespace
// and name; ok is false for anything else (a RequestKey).
func SplitWorkloadKey(key string) (group, kind, namespace, name string, ok bool) {
	parts := strings.SplitN(key, "/", 4)
	if len(parts) != 4 || parts[1] == "" || parts[3] == "" {
		return "", "", "", "", false
	}
	return parts[0], parts[1], parts[2], parts[3], true
}

// podKeyPrefix starts a pod's WorkloadKey; the rest is the ledger's own key
// of the pod, namespace/name.
const podKeyPrefix = "/Pod/"

// RequestKey names the reservation of an object admitted without a name
// (generateName) in namespace by its admission request's uid; "" for no
// uid. Its pods carry it in workload.AnnotationReservation.
func RequestKey(namespace, uid string) string {
	if uid == "" {
		return ""
	}
	return requestKeyPrefix + namespace + "/" + uid
}

// IsRequestKey says whether key is a RequestKey of namespace.
func IsRequestKey(namespace, key string) bool {
	prefix := requestKeyPrefix + namespace + "/"
	return strings.HasPrefix(key, prefix) && len(key) > len(prefix)
}

// Reserve counts an admitted workload's GPUs for its tenant (and ancestors)
// until its pods are seen or ttl passes. Reserving a key again replaces it.
// A pod already counted under the same name reserves nothing: its create
// can only fail (AlreadyExists), and the stored pod counts already.
func (l *Ledger) Reserve(key, tenant string, gpus map[string]int, preemptible bool, ttl time.Duration) {
	l.ReserveGeneration(key, tenant, gpus, preemptible, 0, ttl)
}

// ReserveGeneration is Reserve for the stored version generation of the
// workload (Reservation.Generation).
func (l *Ledger) ReserveGeneration(key, tenant string, gpus map[string]int, preemptible bool, generation int64, ttl time.Duration) {
	if len(gpus) == 0 || tenant == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.release(key)
	r := Reservation{Tenant: tenant, GPUs: maps.Clone(gpus), Preemptible: preemptible, Expires: l.now().Add(ttl), Generation: generation}
	if l.storedPod(key) || l.resolvedNow(key, r) {
		return
	}
	l.add(key, r)
}

// resolvedNow is resolved for a reservation about to be made: one already
// settled under key was another admission's, so only the stored object
// seen counts.
func (l *Ledger) resolvedNow(key string, r Reservation) bool {
	if h, ok := l.held[key]; ok && max(r.Generation, 1) <= h.generation {
		return true
	}
	_, ok := l.heldRequests[key]
	return ok
}

// Now is the ledger's clock: reservations expire by it.
func (l *Ledger) Now() time.Time { return l.now() }

// storedPod says whether key is the WorkloadKey of a pod the ledger counts.
// Callers hold the lock.
func (l *Ledger) storedPod(key string) bool {
	name, isPod := strings.CutPrefix(key, podKeyPrefix)
	_, stored := l.pods[name]
	return isPod && stored
}

// add records a reservation and counts what pods have not consumed of it.
// Callers hold the lock and released key before.
func (l *Ledger) add(key string, r Reservation) {
	l.dropSettling(key)
	l.reserved[key] = &reservation{Reservation: r, made: l.now()}
	l.spend(r, +1)
	l.due(r.Expires, expiresReservation, key, "")
	l.refresh(key)
}

// Put records reservation r under key as it is (a shared ledger's entry),
// replacing any other; an expired or empty one is dropped.
func (l *Ledger) Put(key string, r Reservation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.release(key)
	if r.Tenant == "" || len(r.GPUs) == 0 || l.now().After(r.Expires) || l.resolvedNow(key, r) {
		return
	}
	r.GPUs = maps.Clone(r.GPUs)
	l.add(key, r)
}

// Reservation returns the reservation of key, if any.
func (l *Ledger) Reservation(key string) (Reservation, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	r, ok := l.reserved[key]
	if !ok {
		return Reservation{}, false
	}
	return r.Reservation, true
}

// Release drops the reservation of key, if any: the workload is being
// decided again (the API server reinvoking /mutate), so its own GPUs must
// not count against it.
func (l *Ledger) Release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.release(key)
}

// release drops a reservation. Callers hold the lock.
func (l *Ledger) release(key string) {
	if r, ok := l.reserved[key]; ok {
		l.applyReservation(r, r.applied, -1)
		l.spend(r.Reservation, -1)
		delete(l.reserved, key)
		if _, ok := l.held[key]; ok {
			l.refresh(key) // the hold counts again
		}
	}
}

// consumedKey keys Ledger.consumed: a reservation key and the tenant of
// the pods consuming it, so a key copied into another tenant's pod (an
// exempt namespace's, which Mandate never rewrites) consumes nothing of it.
func consumedKey(key, tenant string) string { return key + "\x00" + tenant }

// reservationKeys are the reservations a pod's GPUs consume beside the
// pod's own (a named pod's, which attribute and refresh read from the
// pod's attribution): its controller owner's (a gang's pods, pod by pod) and
// the request's that admitted it or its owner without a name
// (workload.AnnotationReservation).
func reservationKeys(pod *topology.CountedPod) []string {
	var keys []string
	if owner := gangOwner(pod.Annotations, pod.Controller); owner != nil {
		keys = append(keys, WorkloadKey(owner.APIVersion, owner.Kind, pod.Namespace, owner.Name))
	}
	if key := pod.Annotations[workload.AnnotationReservation]; strings.HasPrefix(key, requestKeyPrefix) {
		keys = append(keys, key)
	}
	return keys
}

// attribute adds (sign +1) or removes (-1) the GPUs of the pod of key
// (namespace/name) to what its reservations' keys have consumed, and
// recounts those reservations. The pod's own reservation reads
// l.attributed: callers have added a (sign +1) or removed it (-1) before.
// Callers hold the lock.
func (l *Ledger) attribute(key string, a attribution, sign int) {
	for _, key := range a.keys {
		ck := consumedKey(key, a.tenant)
		c := l.consumed[ck]
		if c == nil {
			c = map[string]int{}
			l.consumed[ck] = c
		}
		for _, g := range a.gpus {
			c[g.Resource] += sign * g.N
			if c[g.Resource] <= 0 {
				delete(c, g.Resource)
			}
		}
		if len(c) == 0 {
			delete(l.consumed, ck)
		}
		l.refreshFor(key, a.tenant)
	}
	l.refreshFor(podKeyPrefix+key, a.tenant)
}

// refreshFor recounts the reservation and hold of key when they are
// tenant's. Callers hold the lock.
func (l *Ledger) refreshFor(key, tenant string) {
	r, reserved := l.reserved[key]
	h, isHeld := l.held[key]
	if (reserved && r.Tenant == tenant) || (isHeld && h.res.Tenant == tenant) {
		l.refresh(key)
	}
}

// unattribute stops the pod of key (namespace/name) consuming its
// reservations. Callers hold the lock.
func (l *Ledger) unattribute(key string) {
	if old, ok := l.attributed[key]; ok {
		delete(l.attributed, key)
		l.attribute(key, old, -1)
	}
}

// refresh recounts reservation key: its GPUs less what pods consumed of
// them. Callers hold the lock.
// A reservation (an admission's, not settled yet) counts instead of the
// hold of the same key: it is the newer demand.
func (l *Ledger) refresh(key string) {
	h := l.held[key]
	if r, ok := l.reserved[key]; ok {
		l.recount(key, r)
		if h != nil {
			l.setApplied(&h.res, nil)
		}
		return
	}
	if h != nil {
		l.recount(key, &h.res)
	}
}

// recount sets what r counts: its GPUs less what the pods consumed of
// key. Callers hold the lock.
func (l *Ledger) recount(key string, r *reservation) {
	consumed := l.consumed[consumedKey(key, r.Tenant)]
	// A pod's own reservation is consumed by the pod alone.
	var own topology.Counts
	if name, isPod := strings.CutPrefix(key, podKeyPrefix); isPod {
		if a, ok := l.attributed[name]; ok && a.tenant == r.Tenant {
			own = a.gpus
		}
	}
	left := make(map[string]int, len(r.GPUs))
	for res, n := range r.GPUs {
		if n -= consumed[res] + own.Get(res); n > 0 {
			left[res] = n
		}
	}
	l.setApplied(r, left)
}

// setApplied makes r count left. Callers hold the lock.
func (l *Ledger) setApplied(r *reservation, left map[string]int) {
	if maps.Equal(left, r.applied) {
		return
	}
	l.applyReservation(r, r.applied, -1)
	r.applied = left
	l.applyReservation(r, r.applied, +1)
}

func (l *Ledger) applyReservation(r *reservation, gpus map[string]int, sign int) {
	if len(gpus) > 0 {
		l.apply(r.Tenant, podEntry{gpus: topology.CountsOf(gpus), explicit: explicitOf(r.Preemptible)}, sign)
	}
}

func explicitOf(preemptible bool) int8 {
	if preemptible {
		return 1
	}
	return -1
}

// Reservations counts the workloads still reserved: those whose pods have
// not consumed all their GPUs yet.
func (l *Ledger) Reservations() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	n := 0
	for _, r := range l.reserved {
		if len(r.applied) > 0 {
			n++
		}
	}
	return n
}

// LockTree serialises the quota commits of one tenant tree (the tenant's
// root and everything below it): between re-checking the usage a decision
// relied on and reserving, no other admission of the same tree may
// commit. It returns the unlock function.
func (l *Ledger) LockTree(tenant string) func() {
	v, _ := l.trees.LoadOrStore(l.RootOf(tenant), &sync.Mutex{})
	m := v.(*sync.Mutex)
	m.Lock()
	return m.Unlock
}

// RootOf is the root of tenant's tree (tenant itself for a root).
func (l *Ledger) RootOf(tenant string) string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.rootOf(tenant)
}

// rootOf is RootOf for callers holding the lock.
func (l *Ledger) rootOf(tenant string) string {
	root := tenant
	for depth := 0; depth < maxDepth; depth++ {
		p := l.cfg.Parents[root]
		if p == "" {
			break
		}
		root = p
	}
	return root
}

// TreeReservations are the unexpired reservations and gang claims of the
// tenants of root's tree, by key: what a shared ledger stores for the tree.
func (l *Ledger) TreeReservations(root string) map[string]Reservation {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	out := map[string]Reservation{}
	for key, r := range l.reserved {
		if !r.Escrowed && l.rootOf(r.Tenant) == root {
			out[key] = r.Reservation
		}
	}
	for key, st := range l.settling {
		if _, ok := out[key]; !ok && !st.r.Escrowed && l.rootOf(st.r.Tenant) == root {
			out[key] = st.r
		}
	}
	l.treeClaims(root, out)
	return out
}

// SetTreeReservations makes rs the reservations and gang claims of root's
// tree, as a shared ledger holds them (every replica's): the tree's others
// are released, and what pods seen here consumed of each still counts as
// consumed.
func (l *Ledger) SetTreeReservations(root string, rs map[string]Reservation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setTreeClaims(root, rs)
	for key, r := range l.reserved {
		if _, keep := rs[key]; !keep && !r.Escrowed && l.rootOf(r.Tenant) == root {
			l.release(key)
		}
	}
	now := l.now()
	for key, r := range rs {
		if old, ok := l.reserved[key]; ok && (old.Escrowed || sameReservation(old.Reservation, r)) {
			// An escrowed reservation is this replica's own, newer than
			// any stored under its key.
			continue
		}
		l.release(key)
		if r.Owner != "" || r.Tenant == "" || len(r.GPUs) == 0 || now.After(r.Expires) || l.rootOf(r.Tenant) != root {
			continue
		}
		if l.resolved(key, r) {
			// Its object was seen here: the hold or the pod counts it.
			// Not kept among the settled either: the replica that settled
			// it shares it for SettleTime, and keeping it here too would
			// hand it back and forth between replicas for ever.
			continue
		}
		r.GPUs = maps.Clone(r.GPUs)
		l.add(key, r)
	}
}

func sameReservation(a, b Reservation) bool {
	return a.Tenant == b.Tenant && a.Owner == b.Owner && a.Preemptible == b.Preemptible && a.Expires.Equal(b.Expires) &&
		a.Generation == b.Generation && maps.Equal(a.GPUs, b.GPUs)
}

// GangOwnerOf is the gang a pod belongs to: the owner Mandate named on it
// (workload.AnnotationGangOwner: a Deployment, past its ReplicaSet), else
// its controller; nil for neither.
func GangOwnerOf(pod *corev1.Pod) *workload.Owner {
	return gangOwner(pod.Annotations, metav1.GetControllerOfNoCopy(pod))
}

// gangOwner is GangOwnerOf of a pod of the given annotations and
// controller reference (nil without).
func gangOwner(annotations map[string]string, c *metav1.OwnerReference) *workload.Owner {
	if raw, ok := annotations[workload.AnnotationGangOwner]; ok {
		var o workload.Owner
		if err := json.Unmarshal([]byte(raw), &o); err == nil && o.UID != "" && o.Name != "" {
			return &o
		}
	}
	if c != nil {
		return &workload.Owner{APIVersion: c.APIVersion, Kind: c.Kind, Name: c.Name, UID: string(c.UID)}
	}
	return nil
}
