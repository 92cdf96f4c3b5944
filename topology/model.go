package topology

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Model is the live cluster model, fed incrementally from Node and Pod events
// (typically informer callbacks). An event updates only the changed node's
// numbers and the histograms of its domain at each level and of the cluster:
// O(levels × histogram) work, never a rebuild. Snapshot re-files the domains
// changed since the last one in the level indexes and publishes an immutable
// view for queries. A Model is safe for concurrent use.
type Model struct {
	mu       sync.Mutex
	rules    *rules
	levels   []Level
	levelIdx map[string]int

	// nodes holds every known node, and placeholders for node names that
	// bound pods refer to before (or after) the node itself is known.
	nodes map[string]*nodeState
	// base is each known node's info as its Node object says it, devices
	// what its DRA ResourceSlices publish (SetNodeDevices): a node's info
	// is the two merged (withDevices).
	base    map[string]*nodeInfo
	devices map[string]NodeDevices
	// pods holds the pods that currently take GPUs on a node, by
	// namespace/name, and the allocated DRA claims, by claimPodKey. Other
	// pods are not kept.
	pods map[string]podState
	// claims are the allocated DRA claims that hold counted devices, by
	// namespace/name; holders the bound pods holding each claim (pod key →
	// node), podClaims the claims each bound pod holds (model_claims.go).
	claims    map[string]*modelClaim
	holders   map[string]map[string]string
	podClaims map[string][]string
	// domains[i] holds the level-i domains that have GPU capacity, by key.
	domains []map[string]*domState
	// aggs holds, per (resource, product), the cluster totals and the level
	// indexes that snapshots share.
	aggs map[aggKey]*aggView
	// cluster holds the cluster's histograms per (resource, product).
	cluster map[aggKey]*domAgg
	// dirty lists the histograms changed since the last flush.
	dirty     []dirtyRef
	nodeCount int

	// gen counts the events that changed what a snapshot shows.
	gen uint64
	// edit is the token of structures created since the last snapshot was
	// published; only those may be changed in place.
	edit uint64
	// snap is the last published snapshot while nothing has changed since.
	snap *Snapshot
}

type nodeState struct {
	// info is nil while the node is not known (deleted, or not seen yet).
	info *nodeInfo
	// used is the GPUs taken by the pods bound to the node, by resource.
	used map[string]int
}

type podState struct {
	node string
	req  Counts
	// memMiB and devices are a KAI gpu-memory pod's request, kept so that
	// its share is mapped again under a new Config (Reconfigure).
	memMiB  int64
	devices int
}

// NewModel returns an empty Model for cfg, after filling in its defaults and
// validating it.
func NewModel(cfg Config) (*Model, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("unable to create topology model: %w", err)
	}
	m := &Model{
		rules:    newRules(cfg),
		levels:   cfg.Levels,
		levelIdx: make(map[string]int, len(cfg.Levels)),
		nodes:    make(map[string]*nodeState),
		base:     make(map[string]*nodeInfo),
		devices:  make(map[string]NodeDevices),
		pods:     make(map[string]podState),

		claims:    make(map[string]*modelClaim),
		holders:   make(map[string]map[string]string),
		podClaims: make(map[string][]string),
		domains:   make([]map[string]*domState, len(cfg.Levels)),
		aggs:      make(map[aggKey]*aggView),
		cluster:   make(map[aggKey]*domAgg),
		edit:      1,
	}
	for i, l := range cfg.Levels {
		m.levelIdx[l.Name] = i
		m.domains[i] = make(map[string]*domState)
	}
	return m, nil
}

// UpsertNode adds or updates a node. Updates that change nothing the model
// keeps (heartbeats, unrelated labels) cost one comparison.
func (m *Model) UpsertNode(node *corev1.Node) {
	if node == nil {
		return
	}
	info := m.rules.nodeInfo(node)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.base[node.Name] = info
	m.setNode(node.Name, info.withDevices(m.devices[node.Name]), nil)
}

// SetNodeDevices records what the DRA ResourceSlices of a node publish
// (empty: none): its untainted devices add to its capacity, and their
// product names it when its labels do not. A node not known yet takes
// them when it comes.
func (m *Model) SetNodeDevices(name string, d NodeDevices) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d.equal(m.devices[name]) {
		return
	}
	if d.Empty() {
		delete(m.devices, name)
	} else {
		m.devices[name] = d
	}
	if base := m.base[name]; base != nil {
		m.setNode(name, base.withDevices(d), nil)
	}
}

// DeleteNode removes a node. Pods still bound to it stay known and count
// again if a node of that name comes back.
func (m *Model) DeleteNode(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.base, name)
	m.setNode(name, nil, nil)
}

// UpsertPod adds or updates a pod (UpsertCounted of what the model reads
// of it: CountedOf, with the product its node selector pins under the
// model's product label).
func (m *Model) UpsertPod(pod *corev1.Pod) {
	if pod == nil {
		return
	}
	c := CountedOf(pod, pod.Spec.NodeSelector[m.rules.productLabel])
	m.UpsertCounted(&c)
}

// UpsertCounted adds or updates a pod. Only a pod bound to a node
// (Node) and not terminal (Succeeded, Failed) takes GPUs (PodUsage: its
// extended resources and KAI share; the devices of its DRA claims count
// by the claim, UpsertClaim); it may arrive before its node and counts
// once the node is known. pod is only read.
func (m *Model) UpsertCounted(pod *CountedPod) {
	key := pod.Namespace + "/" + pod.Name
	bound := pod.Node != "" && !pod.Terminal()
	var claims []string
	if bound {
		for _, name := range pod.Claims {
			claims = append(claims, pod.Namespace+"/"+name)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var next podState
	if bound {
		next = m.boundPod(pod)
	}
	m.setPod(key, next)
	m.setHolder(key, pod.Node, claims)
}

// boundPod is what a bound pod takes on its node (PodUsage without
// its claims). A gpu-memory pod's share is mapped with its node's product
// when the node is known, else the product it asks for. The caller holds
// mu.
func (m *Model) boundPod(pod *CountedPod) podState {
	product := ""
	if len(pod.Annotations) > 0 {
		product = pod.Product
		if st := m.nodes[pod.Node]; st != nil && st.info != nil && st.info.product != "" {
			product = st.info.product
		}
	}
	h := pod.Holdings(product, Counting{GPUMemory: m.rules.gpuMemory})
	if len(h.GPUs) == 0 {
		return podState{}
	}
	return podState{node: pod.Node, req: CountsOf(h.GPUs), memMiB: h.Share.MemMiB, devices: h.Share.Devices}
}

// remapMemory maps a gpu-memory pod's share again under m's Config (its
// node's product). The caller holds mu.
func (m *Model) remapMemory(st podState) podState {
	if st.memMiB <= 0 {
		return st
	}
	product := ""
	if n := m.nodes[st.node]; n != nil && n.info != nil {
		product = n.info.product
	}
	milli := MilliPerGPU
	if dev, ok := m.rules.gpuMemory.DeviceMiB(SharedResource, product); ok {
		milli = MemoryMilli(st.memMiB, dev)
	}
	req := st.req.Map()
	req[sharedGPUKey] = st.devices * milli
	st.req = CountsOf(req)
	return st
}

// DeletePod removes a pod.
func (m *Model) DeletePod(namespace, name string) {
	key := namespace + "/" + name
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setPod(key, podState{})
	m.setHolder(key, "", nil)
}

// Snapshot returns an immutable view of the model now, safe to query from
// any number of goroutines while the model keeps changing.
//
// While nothing changes it returns the same snapshot. After changes it files
// each changed domain anew in its level indexes (once, however many events
// touched it: O(changed domains × log domains)) and copies the small table
// of index roots per (resource, product). Nothing is O(nodes): the indexes
// are persistent trees shared with the model, which copies the path from the
// root on its next write rather than change a published node.
func (m *Model) Snapshot() *Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.snap == nil {
		m.flush()
		m.snap = &Snapshot{
			levels:    m.levels,
			levelIdx:  m.levelIdx,
			gen:       m.gen,
			nodeCount: m.nodeCount,
			aggs:      maps.Clone(m.aggs),
		}
		m.edit++
	}
	return m.snap
}

// setNode replaces the node's info (nil: unknown) and, when used is not nil,
// its used GPUs. The caller holds mu.
func (m *Model) setNode(name string, info *nodeInfo, used map[string]int) {
	st := m.nodes[name]
	if st == nil {
		if info == nil {
			return
		}
		st = &nodeState{}
		m.nodes[name] = st
	}
	if st.info.equal(info) && used == nil {
		return
	}
	wasKnown := st.info != nil
	moved := m.changeNode(st, func() {
		st.info = info
		if used != nil {
			st.used = used
		}
	})
	switch {
	case !wasKnown && info != nil:
		m.nodeCount++
	case wasKnown && info == nil:
		m.nodeCount--
	}
	if moved || wasKnown != (info != nil) {
		m.changed()
	}
	if st.info == nil && len(st.used) == 0 {
		delete(m.nodes, name)
	}
}

// setPod records what the pod now takes (zero podState: nothing). The caller
// holds mu.
func (m *Model) setPod(key string, next podState) {
	prev, had := m.pods[key]
	if !had && next.req == nil {
		return
	}
	if had && prev.node == next.node && slices.Equal(prev.req, next.req) {
		return
	}
	if next.req == nil {
		delete(m.pods, key)
	} else {
		m.pods[key] = next
	}
	if had && prev.node == next.node {
		m.addUsed(prev.node, prev.req, next.req)
		return
	}
	if had {
		m.addUsed(prev.node, prev.req, nil)
	}
	if next.req != nil {
		m.addUsed(next.node, nil, next.req)
	}
}

// addUsed takes minus off and adds plus to the GPUs used on the node.
func (m *Model) addUsed(name string, minus, plus Counts) {
	st := m.nodes[name]
	if st == nil {
		st = &nodeState{}
		m.nodes[name] = st
	}
	moved := m.changeNode(st, func() {
		if st.used == nil {
			st.used = make(map[string]int, len(plus))
		}
		for _, c := range minus {
			if st.used[c.Resource] -= c.N; st.used[c.Resource] == 0 {
				delete(st.used, c.Resource)
			}
		}
		for _, c := range plus {
			st.used[c.Resource] += c.N
		}
	})
	if moved {
		m.changed()
	}
	if st.info == nil && len(st.used) == 0 {
		delete(m.nodes, name)
	}
}

// changeNode runs mutate on st and moves the node's contribution in the
// aggregates from before to after; it reports whether any aggregate changed.
func (m *Model) changeNode(st *nodeState, mutate func()) bool {
	oldInfo, oldC := st.info, st.contributions()
	mutate()
	return m.transition(oldInfo, oldC, st.info, st.contributions())
}

// changed records that the next snapshot differs from the last.
func (m *Model) changed() {
	m.gen++
	m.snap = nil
}

// Reconfigure returns a new Model for cfg (new levels: a new authority
// model) holding the given nodes and every pod and claim m holds. m is left as it
// is; the caller swaps the two while no event can reach m.
func (m *Model) Reconfigure(cfg Config, nodes []*corev1.Node) (*Model, error) {
	next, err := NewModel(cfg)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	pods := maps.Clone(m.pods)
	next.claims, next.podClaims = maps.Clone(m.claims), maps.Clone(m.podClaims)
	next.devices = maps.Clone(m.devices)
	for c, h := range m.holders {
		next.holders[c] = maps.Clone(h)
	}
	m.mu.Unlock()
	for _, n := range nodes {
		next.UpsertNode(n)
	}
	next.mu.Lock()
	defer next.mu.Unlock()
	for key, st := range pods {
		next.setPod(key, next.remapMemory(st))
	}
	return next, nil
}
