// Package replay is `mandate simulate run`: a discrete-event simulation of
// a demand trace over simulated time, on a simulated cluster, under an
// authority model. Every arrival is decided by Mandate's own decision
// service (review.Service, through the policy's evaluator) against a
// cluster.State that holds the simulated nodes, the tenants' namespaces,
// the holds of the workloads admitted so far and the pods running now, so
// tenancy, priority, quota and topology are decided exactly as admission
// decides them. What happens after admission is the scheduling model of
// docs/simulate.md: a queue in priority order, FIFO within a priority,
// with backfill; the tenant chain's ceilings; gangs started whole (or at
// their elastic minimum) and placed node by node by a simulate/placement
// policy, inside one domain of the required topology level; preemption of
// preemptible work per the model's mayPreempt; node failures and repairs.
package replay

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/simulate/alloc"
	"github.com/mandate-dev/mandate/simulate/placement"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// PlacementTopology is the placement option that asks Mandate's placement
// evaluator (topology.Snapshot.Place, the mandate.placement builtin's) for
// the gang's domain, then places its pods there best-fit.
const PlacementTopology = "topology"

// PlacementNames are the --placement options.
func PlacementNames() []string { return append([]string{PlacementTopology}, placement.Names()...) }

// User is the user the simulated admissions are made for.
const User = "mandate-simulate"

// Options say what to simulate under.
type Options struct {
	// Decider is the policy revision deciding the arrivals; Model its
	// authority model; Revision names it in the report.
	Decider  review.Decider
	Model    model.Model
	Revision string
	// Placement is a PlacementNames entry (default PlacementTopology).
	Placement string
	// Seed of the placement policies' draws among equals.
	Seed uint64
	// Events are node failures and repairs.
	Events []NodeEvent
	// SampleEvery is the time series' step in seconds (default: the
	// trace's span over 200).
	SampleEvery float64
	// Until ends the simulation at this time (seconds; 0: when the last
	// event has happened): what runs then has not completed, what waits
	// never started.
	Until float64
}

// Run simulates jobs on supply under o, to the end: until every admitted
// job has completed or can never start.
func Run(ctx context.Context, jobs []Job, supply Supply, o Options) (*Report, error) {
	s, err := newSim(jobs, supply, o)
	if err != nil {
		return nil, err
	}
	if err := s.run(ctx); err != nil {
		return nil, err
	}
	return s.report(), nil
}

// job is one trace job in the simulation.
type job struct {
	Job
	seq       int
	namespace string
	obj       *unstructured.Unstructured // as stored once admitted
	tenant    string
	chain     []string
	keys      []string // the usage keys its GPUs count under
	req       alloc.Request
	gpus      float64 // per pod, a share as its fraction
	class     string
	value     int
	preempt   bool // preemptible, per its directives
	minPods   int
	level     string // required topology level's node label ("" none)
	levelName string
	preferred string

	state      jobState
	started    float64
	firstStart float64
	startedOK  bool
	bindings   []alloc.Binding
	held       holdReason
	guaranteed bool
	runs       int // starts so far: a finish event is for the run it names
}

type jobState int

const (
	stateArriving jobState = iota
	stateDenied
	stateQueued
	stateRunning
	stateDone
)

type holdReason int

const (
	heldNone holdReason = iota
	heldAuthority
	heldCapacity
)

func (j *job) running() int { return len(j.bindings) }

type sim struct {
	o         Options
	m         model.Model
	state     *cluster.State
	svc       *review.Service
	c         *alloc.Cluster
	policy    placement.Policy
	nodes     []*corev1.Node
	nodeIndex map[string]int
	down      []bool
	domains   map[string]map[string][]int // node label → domain path → node indexes
	// domainNames are each label's domain paths, sorted.
	domainNames map[string][]string
	jobs        []*job
	queue       []*job
	requeue     []*job // evicted while the queue is being walked
	running     map[*job]struct{}
	// runningGPUs are the GPUs each tenant's running jobs hold (a share
	// by its fraction); downGPUs those of failed nodes.
	runningGPUs map[string]float64
	downGPUs    float64
	events      eventHeap
	now         float64
	epoch       int // bumped whenever capacity is freed
	usage       map[string]map[string]float64
	stats       map[string]*tenantAcc
	guar        *tenantAcc
	series      seriesAcc
	namespace   map[string]string // namespace → tenant
}

func newSim(jobs []Job, supply Supply, o Options) (*sim, error) {
	if o.Placement == "" {
		o.Placement = PlacementTopology
	}
	state, err := cluster.New(o.Model)
	if err != nil {
		return nil, err
	}
	s := &sim{o: o, m: o.Model, state: state, nodeIndex: map[string]int{}, domains: map[string]map[string][]int{},
		usage: map[string]map[string]float64{}, stats: map[string]*tenantAcc{}, guar: newTenantAcc("guaranteed"),
		namespace: map[string]string{}, running: map[*job]struct{}{}, runningGPUs: map[string]float64{}}
	s.svc = &review.Service{Decider: o.Decider, State: state}
	rng := rand.New(rand.NewPCG(o.Seed, 0x73696d))
	pol := o.Placement
	if pol == PlacementTopology {
		pol = "best-fit"
	}
	if s.policy, err = placement.New(pol, rng); err != nil {
		if o.Placement != PlacementTopology {
			return nil, fmt.Errorf("%w (or %s)", err, PlacementTopology)
		}
		return nil, err
	}
	specs := make([]alloc.NodeSpec, len(supply.Nodes))
	for i, n := range supply.Nodes {
		if _, dup := s.nodeIndex[n.Name]; dup {
			return nil, fmt.Errorf("node %s appears twice", n.Name)
		}
		s.nodeIndex[n.Name] = i
		specs[i] = spec(n)
		state.UpsertNode(n)
		// A domain is named by its path, the label values of the levels
		// down to it joined by '/', as the placement evaluator names it.
		path := ""
		for _, l := range o.Model.Topology.Levels {
			v, ok := n.Labels[l.NodeLabel]
			if !ok {
				continue
			}
			if path != "" {
				path += "/"
			}
			path += v
			if s.domains[l.NodeLabel] == nil {
				s.domains[l.NodeLabel] = map[string][]int{}
			}
			s.domains[l.NodeLabel][path] = append(s.domains[l.NodeLabel][path], i)
		}
	}
	s.nodes = supply.Nodes
	s.domainNames = map[string][]string{}
	for label, doms := range s.domains {
		s.domainNames[label] = slices.Sorted(maps.Keys(doms))
	}
	s.down = make([]bool, len(supply.Nodes))
	if s.c, err = alloc.New(specs); err != nil {
		return nil, err
	}
	for _, ns := range supply.Namespaces {
		state.UpsertNamespace(ns)
		s.namespace[ns.Name] = ns.Labels[workload.LabelTenant]
	}
	for _, t := range o.Model.TenantNames() {
		if _, ok := s.namespace[t]; !ok {
			state.UpsertNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t, Labels: map[string]string{workload.LabelTenant: t}}})
			s.namespace[t] = t
		}
	}
	order := slices.Clone(jobs)
	sort.SliceStable(order, func(a, b int) bool { return order[a].Submit < order[b].Submit })
	var span float64
	for i, j := range order {
		ns := j.Namespace
		if ns == "" {
			ns = j.Tenant
		}
		sj := &job{Job: j, seq: i, namespace: ns}
		s.jobs = append(s.jobs, sj)
		heap.Push(&s.events, event{at: j.Submit, kind: evArrive, job: sj, seq: len(s.events.items)})
		span = max(span, j.Submit+j.Duration)
	}
	for _, e := range o.Events {
		i, ok := s.nodeIndex[e.Node]
		if !ok {
			return nil, fmt.Errorf("event at %gs names node %q, which the cluster does not have", e.At, e.Node)
		}
		kind := evFail
		if e.Action == ActionRepair {
			kind = evRepair
		}
		heap.Push(&s.events, event{at: e.At, kind: kind, node: i, seq: len(s.events.items)})
	}
	if s.o.SampleEvery <= 0 {
		s.o.SampleEvery = max(span/200, 1)
	}
	return s, nil
}

func (s *sim) acc(tenant string) *tenantAcc {
	a := s.stats[tenant]
	if a == nil {
		a = newTenantAcc(tenant)
		s.stats[tenant] = a
	}
	return a
}

func (s *sim) run(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx)
	nextSample := 0.0
	for s.events.Len() > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		t := s.events.items[0].at
		if s.o.Until > 0 && t > s.o.Until {
			break
		}
		for nextSample <= t {
			s.advance(nextSample)
			s.sample()
			nextSample += s.o.SampleEvery
		}
		s.advance(t)
		for s.events.Len() > 0 && s.events.items[0].at == t {
			e := heap.Pop(&s.events).(event)
			switch e.kind {
			case evArrive:
				if err := s.arrive(ctx, e.job); err != nil {
					return err
				}
			case evFinish:
				if e.job.state == stateRunning && e.gen == e.job.runs {
					s.finish(e.job)
				}
			case evFail:
				s.fail(e.node)
			case evRepair:
				s.repair(e.node)
			}
		}
		s.schedule()
	}
	end := s.now
	if s.o.Until > 0 {
		end = s.o.Until
	}
	for nextSample <= end {
		s.advance(nextSample)
		s.sample()
		nextSample += s.o.SampleEvery
	}
	s.advance(end)
	log.V(1).Info("simulated", "jobs", len(s.jobs), "end", s.now)
	return nil
}

// advance moves simulated time to t, integrating what runs.
func (s *sim) advance(t float64) {
	if t <= s.now {
		return
	}
	dt := (t - s.now) / 3600
	for tenant, g := range s.runningGPUs {
		s.acc(tenant).gpuHours += g * dt
	}
	s.series.integrate(s, dt)
	s.now = t
}

// arrive decides one arrival through the decision service.
func (s *sim) arrive(ctx context.Context, j *job) error {
	obj := manifest(j.Job, j.namespace, j.seq)
	req := evaluator.Request{Operation: "CREATE", User: User, DryRun: true}
	rv, err := s.svc.Review(ctx, obj, req)
	j.tenant = rv.Workload.Tenant
	if j.tenant == "" {
		j.tenant = s.namespace[j.namespace]
		if j.tenant == "" {
			j.tenant = "(namespace " + j.namespace + ")"
		}
	}
	a := s.acc(j.tenant)
	a.Submitted++
	tier, known := s.m.Priorities[rv.Workload.PriorityClass]
	j.guaranteed = known && !tier.Preemptible
	if j.guaranteed {
		s.guar.Submitted++
	}
	if err != nil {
		if !errors.Is(err, workload.ErrInvalid) && !errors.Is(err, workload.ErrUnsupportedKind) {
			return fmt.Errorf("unable to decide job %s: %w", j.Name, err)
		}
		j.state = stateDenied
		a.deny([]string{"INVALID"})
		if j.guaranteed {
			s.guar.deny([]string{"INVALID"})
		}
		return nil
	}
	d := rv.Decision
	if !d.Allowed {
		j.state = stateDenied
		var codes []string
		for _, v := range d.Violations {
			codes = append(codes, v.Code)
		}
		if len(codes) == 0 {
			codes = []string{"DENIED"}
		}
		a.deny(codes)
		if j.guaranteed {
			s.guar.deny(codes)
		}
		return nil
	}
	a.Admitted++
	if j.guaranteed {
		s.guar.Admitted++
	}
	w := rv.Workload
	j.obj = rv.Mutated
	if j.obj == nil {
		j.obj = obj
	}
	j.chain = s.m.Chain(j.tenant)
	res := w.GPUResource
	if res == "" {
		res = DefaultResource
	}
	j.keys = []string{res}
	if w.GPUProduct != "" {
		j.keys = append(j.keys, res+"@"+w.GPUProduct)
	}
	j.req = alloc.Request{CPUMilli: j.CPUMilli, MemoryMiB: j.MemoryMiB, GPUs: j.GPUsPerPod, GPUMilli: j.GPUMilli, Models: j.Products}
	if j.GPUMilli == 0 {
		j.req.GPUMilli = alloc.MilliPerGPU
	}
	j.gpus = float64(j.GPUsPerPod)
	if j.req.Fractional() {
		j.gpus = float64(j.GPUMilli) / alloc.MilliPerGPU
	}
	j.class = d.Directives.PriorityClass
	j.value = s.m.Priorities[j.class].Value
	j.preempt = d.Directives.Preemptible
	j.minPods = j.Pods
	if d.Directives.GangMin > 0 && d.Directives.GangMin < j.Pods {
		j.minPods = d.Directives.GangMin
	}
	j.level, j.levelName, j.preferred = d.Directives.RequiredLabel, d.Directives.RequiredLevel, d.Directives.PreferredLevel
	s.state.LoadHolds([]*unstructured.Unstructured{j.obj}, s.svc.HoldOf)
	j.state = stateQueued
	s.queue = append(s.queue, j)
	return nil
}

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

func splitKey(key string) (resource, product string) {
	for i := range key {
		if key[i] == '@' {
			return key[:i], key[i+1:]
		}
	}
	return key, ""
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
	pods, min, gpus      int
	milli, cpu, mem      int64
	products, level, pre string
	value                int
}

func shapeOf(j *job, room int) shape {
	return shape{pods: room, min: j.minPods, gpus: j.GPUsPerPod, milli: j.req.GPUMilli, cpu: j.CPUMilli, mem: j.MemoryMiB,
		products: fmt.Sprint(j.Products), level: j.level, pre: fmt.Sprint(j.preempt), value: j.value}
}

// place binds up to n of j's pods, at least its minimum, all in one
// domain of its required level; false (nothing bound) when they do not
// fit.
func (s *sim) place(j *job, n int) bool {
	if j.level == "" {
		return s.placeAmong(j, n, nil)
	}
	doms := s.domains[j.level]
	if s.o.Placement == PlacementTopology {
		res, err := s.state.Snapshot().Place(topology.Request{Pods: j.minPods, GPUsPerPod: j.GPUsPerPod, Resource: j.keys[0],
			Product: productOf(j), RequiredLevel: j.levelName, PreferredLevel: j.preferred})
		if err != nil || !res.FitsNow {
			return false
		}
		if nodes, ok := s.domainOf(res); ok && s.placeAmong(j, n, nodes) {
			return true
		}
	}
	for _, v := range s.domainNames[j.level] {
		if s.placeAmong(j, n, doms[v]) {
			return true
		}
	}
	return false
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
	s.epoch++
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
	s.acc(j.tenant).Completed++
	if j.guaranteed {
		s.guar.Completed++
	}
	s.state.UnloadHolds([]*unstructured.Unstructured{j.obj})
	j.obj = nil // ended: only its numbers are kept
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
}

// mayPreempt says whether j may take victim's GPUs: the victim runs
// preemptible (its directives), at a lower value, in a tier j's tier may
// preempt (preemption.mayPreempt) or above its guarantee (a tier that is
// not preemptible, turned preemptible by quotaPolicy.overGuarantee).
func (s *sim) mayPreempt(j, victim *job) bool {
	if !victim.preempt || victim.value >= j.value || j.preempt {
		return false
	}
	if slices.Contains(s.m.Preemption.MayPreempt[j.class], victim.class) {
		return true
	}
	return !s.m.Priorities[victim.class].Preemptible
}

// preemptFor evicts running preemptible jobs, the lowest value and the
// latest started first, until j's minimum fits; when it cannot fit even
// then, nothing is evicted.
func (s *sim) preemptFor(j *job, n int) bool {
	var victims []*job
	for v := range s.running {
		if s.mayPreempt(j, v) {
			victims = append(victims, v)
		}
	}
	if len(victims) == 0 {
		return false
	}
	sort.Slice(victims, func(a, b int) bool {
		x, y := victims[a], victims[b]
		if x.value != y.value {
			return x.value < y.value
		}
		if x.started != y.started {
			return x.started > y.started
		}
		return x.seq < y.seq
	})
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

func podName(j *job, i int) string { return fmt.Sprintf("%s-%d", j.Name, i) }

// pod is the state's pod i of j on its node: owned by the job (it counts
// under the job's hold) and asking what the job's pods ask.
func (s *sim) pod(j *job, i int, b alloc.Binding) *corev1.Pod {
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
