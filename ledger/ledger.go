// Package ledger is Mandate's quota ledger: the GPUs each tenant uses right
// now, per GPU resource and per resource and GPU product (ProductKey), split into preemptible and non-preemptible work and
// rolled up the tenant hierarchy so a parent's usage includes its children.
// It is fed object by object (from a snapshot file or informers) and answers
// for one tenant and its ancestors without walking every pod.
package ledger

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// maxDepth bounds walks up the hierarchy, so a cycle in bad data cannot hang:
// the model's one hierarchy limit (a checked model is never deeper).
const maxDepth = model.MaxDepth

// Usage is the GPUs of one resource (or of one resource and product, under
// a ProductKey) a tenant uses.
type Usage struct {
	Total          int `json:"total"`
	NonPreemptible int `json:"nonPreemptible"`
}

// Config is the part of the authority model the ledger needs.
type Config struct {
	// Parents maps each tenant to its parent ("" for a root).
	Parents map[string]string
	// PreemptibleClasses says which priority classes are preemptible tiers.
	PreemptibleClasses map[string]bool
	// GPUMemory maps a KAI gpu-memory pod to its share of a device.
	GPUMemory topology.GPUMemory
}

type podEntry struct {
	namespace string
	gpus      topology.Counts
	// product is the GPU product the pod asks for ("" for any), node the
	// node it is bound to ("" while pending): a pod without a product
	// counts against its node's (see counted).
	product string
	node    string
	// class is the pod's priority class; explicit is the preemptibility its
	// scheduler keys state (+1 preemptible, -1 not, 0 unsaid).
	class    string
	explicit int8
	// owner is the UID of the pod's controller, "" for none.
	owner string
	// share is what a KAI-shared pod takes, counted in gpus.
	share topology.Share
}

// attribution is what a pod consumes of reservations: its GPUs, under each
// of its reservation keys, for its tenant. keys leave out the pod's own
// WorkloadKey: only the pod itself consumes that one, so its reservation
// reads the pod's attribution (refresh) instead of a consumed entry per
// pod.
type attribution struct {
	keys   []string
	tenant string
	gpus   topology.Counts
}

// Ledger is safe for concurrent use.
type Ledger struct {
	mu       sync.RWMutex
	cfg      Config
	nsTenant map[string]string
	pods     map[string]podEntry
	// rolled[tenant][resource] includes every descendant, and reservations.
	rolled   map[string]map[string]Usage
	reserved map[string]*reservation
	// held are the stored workloads' holds by WorkloadKey (UpsertHold),
	// heldRequests the key of the hold of each workload admitted under a
	// request key, settling the reservations settled here lately.
	held         map[string]*held
	heldRequests map[string]string
	settling     map[string]settled
	// consumed sums, per consumedKey, the GPUs of the pods seen that
	// consume that reservation (an owner's or a request's; a pod's own
	// is its attribution); attributed remembers each pod's share
	// (terminal pods too: a finished pod still consumed its reservation)
	// until the pod is deleted.
	consumed   map[string]map[string]int
	attributed map[string]attribution
	// owned counts the counted pods of each controller, by the pods'
	// tenant and the owner's UID (ownedKey), and claims the gang pods
	// admitted on their owner's directives that are not seen yet (owner
	// UID → claim key → claim): see ClaimGangPod.
	owned  map[string]int
	claims map[string]map[string]claim
	// expiries are the deadlines of reserved, settling and claims, the
	// soonest first (expire).
	expiries expiries
	// draClaims are the DRA ResourceClaims' GPUs by claim key
	// (namespace/name), holders the pods holding each (pod key → its
	// input) and holding the inputs of the pods that hold any: see
	// UpsertClaim.
	draClaims map[string]map[string]int
	holders   map[string]map[string]*podInput
	holding   map[string]*podInput
	// nodeProduct is each node's GPU product, onNode the counted pods
	// bound to a node that ask for no product (SetNodeProduct).
	nodeProduct map[string]string
	onNode      map[string]map[string]struct{}
	trees       sync.Map // root tenant → *sync.Mutex, see LockTree
	now         func() time.Time
	// holder names this replica as a grant holder ("" for none), and
	// storeBound is how long past its Expires another holder's grant
	// still counts (SetHolder). grants are every holder's grants of the
	// trees read (grantKey → entry), spent what this replica's escrowed
	// reservations (reserved and settling) spend of its own, by tenant.
	holder     string
	storeBound time.Duration
	grants     map[string]*grantEntry
	spent      map[string]map[string]Usage
}

// New returns an empty ledger.
func New(cfg Config) *Ledger {
	return &Ledger{
		cfg:          cfg,
		nsTenant:     map[string]string{},
		pods:         map[string]podEntry{},
		rolled:       map[string]map[string]Usage{},
		reserved:     map[string]*reservation{},
		held:         map[string]*held{},
		settling:     map[string]settled{},
		heldRequests: map[string]string{},
		consumed:     map[string]map[string]int{},
		attributed:   map[string]attribution{},
		owned:        map[string]int{},
		claims:       map[string]map[string]claim{},
		draClaims:    map[string]map[string]int{},
		holders:      map[string]map[string]*podInput{},
		holding:      map[string]*podInput{},
		grants:       map[string]*grantEntry{},
		spent:        map[string]map[string]Usage{},
		now:          time.Now,

		nodeProduct: map[string]string{},
		onNode:      map[string]map[string]struct{}{},
	}
}

// SetConfig replaces the hierarchy and tiers (a new authority model) and
// recounts every pod under them.
func (l *Ledger) SetConfig(cfg Config) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cfg = cfg
	l.rolled = map[string]map[string]Usage{}
	for key, e := range l.pods {
		if e.share.MemMiB > 0 {
			l.pods[key] = remapMemory(e, cfg.GPUMemory)
		}
	}
	for _, in := range l.holding { // counted again when a claim changes
		if in.share.MemMiB > 0 {
			e := remapMemory(podEntry{gpus: topology.CountsOf(in.own), share: in.share, product: in.product}, cfg.GPUMemory)
			in.own, in.share = e.gpus.Map(), e.share
		}
	}
	for _, e := range l.pods {
		l.apply(l.nsTenant[e.namespace], e, +1)
	}
	for _, r := range l.reserved {
		l.applyReservation(r, r.applied, +1)
	}
	for _, h := range l.held {
		l.applyReservation(&h.res, h.res.applied, +1)
	}
	for _, g := range l.grants {
		l.applyGrant(g.Tenant, g.applied, +1)
	}
}

// UpsertNamespace records which tenant a namespace belongs to, moving the
// usage of its pods when the label changed.
func (l *Ledger) UpsertNamespace(ns *corev1.Namespace) {
	l.setTenant(ns.Name, ns.Labels[workload.LabelTenant])
}

// DeleteNamespace forgets a namespace; its pods stop counting for a tenant.
func (l *Ledger) DeleteNamespace(name string) { l.setTenant(name, "") }

func (l *Ledger) setTenant(ns, tenant string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.nsTenant[ns]
	if old == tenant {
		return
	}
	for _, e := range l.pods {
		if e.namespace == ns {
			l.apply(old, e, -1)
			l.apply(tenant, e, +1)
			l.countOwned(old, e.owner, -1)
			l.countOwned(tenant, e.owner, +1)
		}
	}
	var moved []string
	for key, h := range l.held {
		if h.namespace == ns {
			l.setApplied(&h.res, nil)
			h.res.Tenant = tenant
			moved = append(moved, key)
		}
	}
	if tenant == "" {
		delete(l.nsTenant, ns)
	} else {
		l.nsTenant[ns] = tenant
	}
	for _, key := range moved {
		l.refresh(key)
	}
}

// UpsertPod counts a pod's GPUs; terminal pods and pods without GPUs count
// nothing. Pending pods count: they are admitted work waiting for capacity.
// A pod's GPUs, terminal or not, consume the reservations it was admitted
// under, so they count once. They include the devices of the DRA claims
// the pod holds (UpsertClaim).
func (l *Ledger) UpsertPod(pod *corev1.Pod) {
	// A gpu-memory share is mapped with the product the pod asks for, as
	// admission counted it, else as the whole device it occupies.
	c := topology.CountedOf(pod, workload.PodProduct(&pod.Spec))
	l.UpsertCounted(&c)
}

// UpsertCounted is UpsertPod of what the ledger reads of a pod (its
// facts, as the informers keep them). pod is only read.
func (l *Ledger) UpsertCounted(pod *topology.CountedPod) {
	key := pod.Namespace + "/" + pod.Name
	l.mu.RLock()
	mem := l.cfg.GPUMemory
	l.mu.RUnlock()
	in := inputOf(pod, mem)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setPod(key, in)
}

// podInput is what the ledger reads of a pod: all it needs to count the
// pod again when a claim it holds changes.
type podInput struct {
	name, namespace string
	// own is the pod's GPUs without its claims' devices
	// (topology.PodHoldings without a claim lookup: the ledger counts the
	// claims it is told of, UpsertClaim, each once).
	own      map[string]int
	share    topology.Share
	terminal bool
	class    string
	explicit int8
	product  string
	node     string
	owner    string
	// keys are the reservations it consumes (reservationKeys);
	// reservation its mandate.dev/reservation annotation.
	keys        []string
	reservation string
	// claims are the keys (namespace/name) of the DRA claims it holds.
	claims []string
}

func inputOf(pod *topology.CountedPod, mem topology.GPUMemory) *podInput {
	h := pod.Holdings(pod.Product, topology.Counting{GPUMemory: mem})
	in := &podInput{name: pod.Name, namespace: pod.Namespace, own: h.GPUs, share: h.Share,
		terminal: pod.Terminal(),
		class:    pod.PriorityClass, explicit: explicitPreemptibility(pod.Labels, pod.Annotations),
		product: pod.Product, node: pod.Node,
		keys: reservationKeys(pod), reservation: pod.Annotations[workload.AnnotationReservation]}
	if c := gangOwner(pod.Annotations, pod.Controller); c != nil {
		in.owner = c.UID
	}
	for _, name := range pod.Claims {
		in.claims = append(in.claims, pod.Namespace+"/"+name)
	}
	return in
}

// count counts the pod of key as in says, with the devices of the claims
// it is the counter of (claimCounter), replacing what it counted before.
// Callers hold the lock.
func (l *Ledger) count(key string, in *podInput) {
	demand := in.own
	if extra := l.claimDemand(key, in); len(extra) > 0 {
		demand = make(map[string]int, len(in.own)+len(extra))
		for res, n := range in.own {
			demand[res] += n
		}
		for res, n := range extra {
			demand[res] += n
		}
	}
	gpus := topology.CountsOf(demand)
	l.forget(key)
	l.unattribute(key)
	if len(gpus) > 0 {
		a := attribution{keys: in.keys, tenant: l.nsTenant[in.namespace], gpus: withProduct(gpus, in.product)}
		l.attributed[key] = a
		l.attribute(key, a, +1)
		l.settlePodReservations(key, in)
	}
	if len(gpus) > 0 && !in.terminal {
		next := podEntry{namespace: in.namespace, gpus: gpus, class: in.class, explicit: in.explicit,
			product: in.product, node: in.node, share: in.share, owner: in.owner}
		l.confirmClaim(in.namespace, in.name, in.reservation, next.owner)
		l.pods[key] = next
		l.index(key, next, +1)
		l.countOwned(l.nsTenant[next.namespace], next.owner, +1)
		l.apply(l.nsTenant[next.namespace], next, +1)
	}
}

// forget stops counting the pod of key, if counted. Callers hold the lock.
func (l *Ledger) forget(key string) {
	old, ok := l.pods[key]
	if !ok {
		return
	}
	l.apply(l.nsTenant[old.namespace], old, -1)
	l.index(key, old, -1)
	delete(l.pods, key)
	l.countOwned(l.nsTenant[old.namespace], old.owner, -1)
}

// DeletePod stops counting a pod.
func (l *Ledger) DeletePod(namespace, name string) {
	key := namespace + "/" + name
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setPod(key, nil)
}

// apply adds (sign +1) or removes (-1) a pod's GPUs on the tenant and every
// ancestor. Callers hold the lock.
func (l *Ledger) apply(tenant string, e podEntry, sign int) {
	preemptible := l.preemptible(e)
	gpus := l.counted(e)
	for t, depth := tenant, 0; t != "" && depth < maxDepth; t, depth = l.cfg.Parents[t], depth+1 {
		byRes := l.rolled[t]
		if byRes == nil {
			byRes = map[string]Usage{}
			l.rolled[t] = byRes
		}
		for _, c := range gpus {
			u := byRes[c.Resource]
			u.Total += sign * c.N
			if !preemptible {
				u.NonPreemptible += sign * c.N
			}
			byRes[c.Resource] = u
		}
	}
}

// preemptible says whether a pod counts as preemptible work: what its
// scheduler keys state, else its class's tier.
func (l *Ledger) preemptible(e podEntry) bool {
	return e.explicit > 0 || (e.explicit == 0 && l.cfg.PreemptibleClasses[e.class])
}

// UsageExcluding is Usage without the pods whose controller is ownerUID:
// the view in which a change of that owner's demand is decided as its
// whole new demand.
func (l *Ledger) UsageExcluding(tenant, ownerUID string) map[string]map[string]Usage {
	out := l.usage(tenant)
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, e := range l.pods {
		if e.owner != ownerUID || ownerUID == "" {
			continue
		}
		l.subtract(out, l.nsTenant[e.namespace], e)
	}
	foldAll(out) // after the pods' shared milli-GPUs are taken out
	return out
}

// Usage returns the rolled-up usage of the tenant and each of its ancestors:
// what input.usage holds for a decision.
func (l *Ledger) Usage(tenant string) map[string]map[string]Usage {
	out := l.usage(tenant)
	foldAll(out)
	return out
}

// usage is Usage with shared GPUs still in milli-GPUs under SharedKey.
func (l *Ledger) usage(tenant string) map[string]map[string]Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	out := map[string]map[string]Usage{}
	for t, depth := tenant, 0; t != "" && depth < maxDepth; t, depth = l.cfg.Parents[t], depth+1 {
		byRes := make(map[string]Usage, len(l.rolled[t]))
		for res, u := range l.rolled[t] {
			byRes[res] = u
		}
		out[t] = byRes
	}
	return out
}

// TenantOf returns the tenant of a namespace, "" when it has none.
func (l *Ledger) TenantOf(namespace string) string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.nsTenant[namespace]
}

// LabelPreemptible is set by Mandate on every pod template it governs; it
// and the schedulers' preemptibility keys (facts.PreemptibilityKeys) that
// Mandate's adapters set from the decision take precedence over the
// class's tier.
const LabelPreemptible = "mandate.dev/preemptible"

// explicitPreemptibility is 1 when the pod says it is preemptible, -1 when
// it says it is not, 0 when it says nothing; Mandate's label first, then
// any scheduler's key, preemptible winning.
func explicitPreemptibility(labels, annotations map[string]string) int8 {
	switch labels[LabelPreemptible] {
	case "true":
		return 1
	case "false":
		return -1
	}
	var said int8
	for _, k := range facts.PreemptibilityKeys() {
		from := annotations
		if k.IsLabel() {
			from = labels
		}
		switch v, ok := from[k.Name]; {
		case !ok:
		case v == k.Preemptible:
			return 1
		case v == k.NonPreemptible:
			said = -1
		}
	}
	return said
}
