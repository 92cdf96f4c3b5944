package replay

import (
	"container/heap"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/simulate/alloc"
	"github.com/mandate-dev/mandate/topology"
)

// quotaRoom is how many of j's pods its tenant chain's ceilings let run
// now, counting what runs.
func (s *sim) quotaRoom(j *job) int {
	room := j.Pods
	if j.gpus == 0 {
		return room
	}
	for _, t := range j.chain {
		for _, key := range j.keys {
			res, product := splitKey(key)
			l, ok := s.m.QuotaOf(t, res, product)
			if !ok {
				continue
			}
			free := float64(l.Ceiling) - s.usage[t][key]
			n := int((free + 1e-9) / j.gpus)
			room = min(room, max(n, 0))
		}
	}
	return room
}

// splitKey reads a usage key (a resource, or its topology.ProductKey).
func splitKey(key string) (resource, product string) {
	resource, product, _ = strings.Cut(key, topology.ProductSep)
	return resource, product
}

// schedule starts what can start, in priority order, FIFO within a
// priority, with backfill: a job that cannot start does not stop the ones
// after it.
func (s *sim) schedule() {
	s.queue = append(s.queue, s.requeue...)
	s.requeue = s.requeue[:0]
	if len(s.queue) == 0 {
		return
	}
	sort.SliceStable(s.queue, func(a, b int) bool {
		x, y := s.queue[a], s.queue[b]
		if x.value != y.value {
			return x.value > y.value
		}
		if x.Submit != y.Submit {
			return x.Submit < y.Submit
		}
		return x.seq < y.seq
	})
	failed := map[shape]bool{}
	kept := s.queue[:0]
	for _, j := range s.queue {
		room := s.quotaRoom(j)
		if room < j.minPods && s.reclaimFor(j) {
			room = s.quotaRoom(j)
		}
		if room < j.minPods {
			j.held = heldAuthority
			kept = append(kept, j)
			continue
		}
		sh := shapeOf(j, room)
		if !failed[sh] && (s.place(j, room) || s.preemptFor(j, room)) {
			s.start(j)
			continue
		}
		failed[sh] = true
		j.held = heldCapacity
		kept = append(kept, j)
	}
	clear(s.queue[len(kept):])
	s.queue = append(kept, s.requeue...)
	s.requeue = s.requeue[:0]
}

// shape is what placement depends on: a job of a shape that did not fit
// in this pass does not fit later in it (nothing is freed in between).
type shape struct {
	pods, min, gpus int
	milli, cpu, mem int64
	products, level string
	preempt         bool
	value           int
	// pool and unit: placement rules give jobs of one size different
	// nodes (their pool, the isolation unit whose domains they share).
	pool, unit string
}

func shapeOf(j *job, room int) shape {
	sh := shape{pods: room, min: j.minPods, gpus: j.GPUsPerPod, milli: j.req.GPUMilli, cpu: j.CPUMilli, mem: j.MemoryMiB,
		products: j.productsKey, level: j.level, preempt: j.preempt, value: j.value, unit: isolationUnit(j)}
	if j.placement != nil {
		sh.pool = j.placement.Pool
	}
	return sh
}

// isolationUnit is whose work j may share an isolation domain with: its
// isolation unit (the tenant whose isolation rule it is), else its
// tenant's own.
func isolationUnit(k *job) string {
	if k.placement != nil && k.placement.IsolationUnit != "" {
		return k.placement.IsolationUnit
	}
	return "tenant:" + k.tenant
}

// place binds up to n of j's pods, at least its minimum, all in one
// domain of its required level; false (nothing bound) when they do not
// fit.
func (s *sim) place(j *job, n int) bool {
	allowed, confined := s.allowedNodes(j)
	if j.level == "" {
		return s.placeAmong(j, n, within(nil, allowed, confined))
	}
	doms := s.domains[j.level]
	if s.o.Placement == PlacementTopology {
		pool := ""
		if j.placement != nil {
			pool = j.placement.Pool
		}
		res, err := s.state.Snapshot().Place(topology.Request{Pods: j.minPods, GPUsPerPod: j.GPUsPerPod, Resource: j.keys[0],
			Product: productOf(j), RequiredLevel: j.levelName, PreferredLevel: j.preferred, Pool: pool})
		if err != nil || !res.FitsNow {
			return false
		}
		if nodes, ok := s.domainOf(res); ok && s.placeAmong(j, n, within(nodes, allowed, confined)) {
			return true
		}
	}
	for _, v := range s.domainNames[j.level] {
		if s.placeAmong(j, n, within(doms[v], allowed, confined)) {
			return true
		}
	}
	return false
}

// allowedNodes are the nodes j's placement lets it use, as the scheduler
// told by its directives would: those of its pool (the node selector),
// less, where isolation applies, every node whose isolation domain runs
// work it must not share one with — another tenant's, for an isolated
// job; an isolated tenant's, for any other. confined is false when
// nothing restricts j (every node).
func (s *sim) allowedNodes(j *job) (nodes map[int]bool, confined bool) {
	mine := isolationUnit(j)
	// The isolation domains j may not enter: label → values.
	barred := map[string]map[string]bool{}
	bar := func(label string, node int) {
		if v, ok := s.nodes[node].Labels[label]; ok {
			if barred[label] == nil {
				barred[label] = map[string]bool{}
			}
			barred[label][v] = true
		}
	}
	for k := range s.running {
		if isolationUnit(k) == mine {
			continue
		}
		for _, b := range k.bindings {
			if j.placement != nil && j.placement.IsolationLabel != "" {
				bar(j.placement.IsolationLabel, b.Node)
			}
			if k.placement != nil && k.placement.IsolationLabel != "" {
				bar(k.placement.IsolationLabel, b.Node)
			}
		}
	}
	var sel map[string][]string
	if j.placement != nil {
		sel = j.placement.NodeSelector
	}
	if len(sel) == 0 && len(barred) == 0 {
		return nil, false
	}
	nodes = map[int]bool{}
	for i, n := range s.nodes {
		if topology.PoolSelector(sel).Matches(n.Labels) && !isBarred(barred, n.Labels) {
			nodes[i] = true
		}
	}
	return nodes, true
}

func isBarred(barred map[string]map[string]bool, labels map[string]string) bool {
	for label, values := range barred {
		if v, ok := labels[label]; ok && values[v] {
			return true
		}
	}
	return false
}

// within is nodes (nil: every node) restricted to allowed when confined;
// an empty, non-nil list when none is left.
func within(nodes []int, allowed map[int]bool, confined bool) []int {
	if !confined {
		return nodes
	}
	out := []int{}
	if nodes == nil {
		for i := range allowed {
			out = append(out, i)
		}
		sort.Ints(out)
		return out
	}
	for _, i := range nodes {
		if allowed[i] {
			out = append(out, i)
		}
	}
	return out
}

func productOf(j *job) string {
	if len(j.keys) > 1 {
		_, p := splitKey(j.keys[1])
		return p
	}
	return ""
}

// domainOf is the node indexes of the domain the placement evaluator
// chose.
func (s *sim) domainOf(res topology.Result) ([]int, bool) {
	for _, l := range s.m.Topology.Levels {
		if l.Name == res.Level {
			nodes, ok := s.domains[l.NodeLabel][res.Domain]
			return nodes, ok
		}
	}
	return nil, false
}

// placeAmong places pods of j one by one by the placement policy on nodes
// (nil: all) up to n; it keeps them when at least the minimum fit.
func (s *sim) placeAmong(j *job, n int, nodes []int) bool {
	var bound []alloc.Binding
	for range n {
		b, ok := s.policy.PlaceAmong(s.c, j.req, nodes)
		if !ok {
			break
		}
		if err := s.c.Bind(j.req, b); err != nil {
			break
		}
		bound = append(bound, b)
	}
	if len(bound) < j.minPods {
		for _, b := range bound {
			s.c.Release(j.req, b)
		}
		return false
	}
	j.bindings = bound
	return true
}

// start runs j with the pods placed: its GPUs count against its chain,
// its pods are in the state, its end is an event.
func (s *sim) start(j *job) {
	j.state = stateRunning
	j.started = s.now
	j.runs++
	if !j.startedOK {
		j.startedOK, j.firstStart = true, s.now
		s.acc(j.tenant).waits = append(s.acc(j.tenant).waits, s.now-j.Submit)
		if j.guaranteed {
			s.guar.waits = append(s.guar.waits, s.now-j.Submit)
		}
	}
	s.count(j, 1)
	for i, b := range j.bindings {
		s.state.UpsertPod(s.pod(j, i, b))
	}
	heap.Push(&s.events, event{at: s.now + j.Duration, kind: evFinish, job: j, gen: j.runs})
	s.observe(j, EventStart)
}

// stop takes j's pods off the cluster; released says their node
// resources were given back already.
func (s *sim) stop(j *job, released bool) {
	for i, b := range j.bindings {
		if !released {
			s.c.Release(j.req, b)
		}
		s.state.DeletePod(j.namespace, podName(j, i))
	}
	s.count(j, -1)
	j.bindings = nil
}

func (s *sim) count(j *job, sign float64) {
	g := sign * float64(j.running()) * j.gpus
	s.runningGPUs[j.tenant] += g
	if sign > 0 {
		s.running[j] = struct{}{}
	} else {
		delete(s.running, j)
	}
	for _, t := range j.chain {
		if s.usage[t] == nil {
			s.usage[t] = map[string]float64{}
		}
		for _, k := range j.keys {
			s.usage[t][k] += g
		}
	}
}

func (s *sim) finish(j *job) {
	s.stop(j, false)
	j.state = stateDone
	if j.initial {
		return
	}
	s.acc(j.tenant).Completed++
	if j.guaranteed {
		s.guar.Completed++
	}
	s.state.UnloadHolds([]*unstructured.Unstructured{j.obj})
	j.obj = nil // ended: only its numbers are kept
	s.observe(j, EventEnd)
}

// evict stops a running job and queues it again; the GPU-hours it ran are
// lost (it starts again from the beginning).
func (s *sim) evict(j *job, released bool) {
	lost := float64(j.running()) * j.gpus * (s.now - j.started) / 3600
	a := s.acc(j.tenant)
	a.Preemptions++
	a.GPUHoursLost += lost
	s.stop(j, released)
	j.state = stateQueued
	s.requeue = append(s.requeue, j)
	s.observe(j, EventEvict)
}

// preemptFor evicts running preemptible jobs, the lowest value and the
// latest started first, until j's minimum fits; when it cannot fit even
// then, nothing is evicted.
func (s *sim) preemptFor(j *job, n int) bool {
	victims := s.victims(func(v *job) bool { return s.mayPreempt(j, v) })
	if len(victims) == 0 {
		return false
	}
	for k, v := range victims {
		s.unbind(v)
		if s.place(j, n) {
			for _, e := range victims[:k+1] {
				s.evict(e, true)
			}
			return true
		}
	}
	for _, v := range victims {
		s.rebind(v)
	}
	return false
}

// reclaimFor evicts running preemptible jobs of other tenants that share
// one of j's ancestors — work their tenants run above their guarantees,
// borrowed — until j's tenant chain has room for j's minimum: the lowest
// value and the latest started first, whatever their priority (a tenant
// within its guarantee reclaims what others borrowed, as Kueue's
// reclaimWithinCohort and KAI's reclaim do). A preemptible j reclaims
// nothing, and nothing is evicted when evicting all of them would not make
// room. The GPUs are placed afterwards as for any start.
func (s *sim) reclaimFor(j *job) bool {
	if j.preempt || j.gpus == 0 {
		return false
	}
	victims := s.victims(func(v *job) bool { return s.mayReclaim(j, v) })
	if len(victims) == 0 {
		return false
	}
	// A trial on the usage alone: the victims' GPUs taken off their
	// chains, put back unless enough of them make room.
	taken := 0
	for _, v := range victims {
		s.count(v, -1)
		taken++
		if s.quotaRoom(j) >= j.minPods {
			break
		}
	}
	enough := s.quotaRoom(j) >= j.minPods
	for _, v := range victims[:taken] {
		s.count(v, 1)
	}
	if !enough {
		return false
	}
	for _, v := range victims[:taken] {
		s.evict(v, false)
	}
	return true
}

// unbind takes a running job's pods off the nodes and the state for a
// trial; rebind puts them back as they were.
func (s *sim) unbind(j *job) {
	for i, b := range j.bindings {
		s.c.Release(j.req, b)
		s.state.DeletePod(j.namespace, podName(j, i))
	}
}

func (s *sim) rebind(j *job) {
	for i, b := range j.bindings {
		_ = s.c.Bind(j.req, b)
		s.state.UpsertPod(s.pod(j, i, b))
	}
}

func podName(j *job, i int) string {
	if j.initial {
		return j.startedPod.Name
	}
	return fmt.Sprintf("%s-%d", j.Name, i)
}

// pod is the state's pod i of j on its node: owned by the job (it counts
// under the job's hold) and asking what the job's pods ask.
func (s *sim) pod(j *job, i int, b alloc.Binding) *corev1.Pod {
	if j.initial {
		p := j.startedPod.DeepCopy()
		p.Spec.NodeName = s.nodes[b.Node].Name
		return p
	}
	tmpl, _, _ := unstructured.NestedMap(j.obj.Object, "spec", "template")
	p := &corev1.Pod{}
	_ = runtimeFromMap(tmpl, p)
	ctrlTrue := true
	p.Name, p.Namespace = podName(j, i), j.namespace
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: uidOf(j.seq), Controller: &ctrlTrue}}
	p.Spec.NodeName = s.nodes[b.Node].Name
	p.Status.Phase = corev1.PodRunning
	return p
}
