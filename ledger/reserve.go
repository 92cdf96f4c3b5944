package ledger

import (
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/workload"
)

// requestKeyPrefix starts the keys of reservations made for objects
// without a name yet (RequestKey).
const requestKeyPrefix = "uid/"

// reservation is GPUs granted to an admitted workload whose pods the ledger
// has not (all) seen yet, so that admissions in quick succession, ahead of
// the informers, do not each see the same free quota.
type reservation struct {
	tenant      string
	gpus        map[string]int
	preemptible bool
	expires     time.Time
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

// podKeyPrefix starts a pod's WorkloadKey; the rest is the ledger's own key
// of the pod, namespace/name.
const podKeyPrefix = "/Pod/"

// RequestKey names the reservation of an object admitted without a name
// (generateName) by its admission request's uid; "" for no uid. Its pods
// carry it in workload.AnnotationReservation.
func RequestKey(uid string) string {
	if uid == "" {
		return ""
	}
	return requestKeyPrefix + uid
}

// Reserve counts an admitted workload's GPUs for its tenant (and ancestors)
// until its pods are seen or ttl passes. Reserving a key again replaces it.
// A pod already counted under the same name reserves nothing: its create
// can only fail (AlreadyExists), and the stored pod counts already.
func (l *Ledger) Reserve(key, tenant string, gpus map[string]int, preemptible bool, ttl time.Duration) {
	if len(gpus) == 0 || tenant == "" {
		return
	}
	copied := make(map[string]int, len(gpus))
	for r, n := range gpus {
		copied[r] = n
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.release(key)
	if name, isPod := strings.CutPrefix(key, podKeyPrefix); isPod {
		if _, stored := l.pods[name]; stored {
			return
		}
	}
	r := &reservation{tenant: tenant, gpus: copied, preemptible: preemptible, expires: l.now().Add(ttl)}
	l.reserved[key] = r
	l.applyReservation(r, +1)
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
		l.applyReservation(r, -1)
		delete(l.reserved, key)
	}
}

// consume moves a seen pod's GPUs out of the reservation of the pod itself,
// of its controller owner, or of the request that admitted it or its owner
// without a name (workload.AnnotationReservation), so they count once.
// Callers hold the lock.
func (l *Ledger) consume(pod *corev1.Pod, gpus map[string]int) {
	l.release(WorkloadKey("v1", "Pod", pod.Namespace, pod.Name))
	if key := pod.Annotations[workload.AnnotationReservation]; strings.HasPrefix(key, requestKeyPrefix) {
		// Only a reservation of the pod's own tenant: a key copied into
		// another tenant's pod (an exempt namespace's, which Mandate never
		// rewrites) must not release it.
		if r, ok := l.reserved[key]; ok && r.tenant == l.nsTenant[pod.Namespace] {
			l.shrink(key, r, gpus)
			return
		}
	}
	owner := metav1.GetControllerOf(pod)
	if owner == nil {
		return
	}
	key := WorkloadKey(owner.APIVersion, owner.Kind, pod.Namespace, owner.Name)
	if r, ok := l.reserved[key]; ok {
		l.shrink(key, r, gpus)
	}
}

// shrink takes a seen pod's GPUs off reservation r (of key), dropping it
// when nothing is left. Callers hold the lock.
func (l *Ledger) shrink(key string, r *reservation, gpus map[string]int) {
	l.applyReservation(r, -1)
	for res, n := range gpus {
		r.gpus[res] = max(r.gpus[res]-n, 0)
	}
	left := 0
	for _, n := range r.gpus {
		left += n
	}
	if left == 0 {
		delete(l.reserved, key)
		return
	}
	l.applyReservation(r, +1)
}

// expire drops reservations and gang claims past their time. Callers
// hold the lock.
func (l *Ledger) expire() {
	now := l.now()
	for key, r := range l.reserved {
		if now.After(r.expires) {
			l.release(key)
		}
	}
	for owner, pending := range l.claims {
		for key, expires := range pending {
			if now.After(expires) {
				delete(pending, key)
			}
		}
		if len(pending) == 0 {
			delete(l.claims, owner)
		}
	}
}

func (l *Ledger) applyReservation(r *reservation, sign int) {
	l.apply(r.tenant, podEntry{gpus: r.gpus, explicit: explicitOf(r.preemptible)}, sign)
}

func explicitOf(preemptible bool) int8 {
	if preemptible {
		return 1
	}
	return -1
}

// Reservations counts the workloads still reserved.
func (l *Ledger) Reservations() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	return len(l.reserved)
}

// LockTree serialises deciding and reserving for one tenant tree (the
// tenant's root and everything below it): between reading usage and
// reserving, no other admission of the same tree may read. It returns the
// unlock function.
func (l *Ledger) LockTree(tenant string) func() {
	root := tenant
	l.mu.RLock()
	for depth := 0; depth < maxDepth; depth++ {
		p := l.cfg.Parents[root]
		if p == "" {
			break
		}
		root = p
	}
	l.mu.RUnlock()
	v, _ := l.trees.LoadOrStore(root, &sync.Mutex{})
	m := v.(*sync.Mutex)
	m.Lock()
	return m.Unlock
}
