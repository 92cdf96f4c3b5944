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
	"strings"

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
	// StartingRemaining is how long the starting state's pods still run
	// (seconds; 0: to the end).
	StartingRemaining float64
	// Until ends the simulation at this time (seconds; 0: when the last
	// event has happened): what runs then has not completed, what waits
	// never started.
	Until float64
	// Observe, when set, is told of every job's start, eviction and end,
	// in the order they happen (for tests that compare the order with a
	// real scheduler's).
	Observe func(JobEvent)
}

// JobEvent is one job's start, eviction or end at a simulated time.
type JobEvent struct {
	At   float64
	Job  string
	What string // EventStart, EventEvict or EventEnd
}

// The JobEvent kinds.
const (
	EventStart = "start"
	EventEvict = "evict"
	EventEnd   = "end"
)

func (s *sim) observe(j *job, what string) {
	if s.o.Observe != nil {
		s.o.Observe(JobEvent{At: s.now, Job: j.Name, What: what})
	}
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
	// productsKey is Products joined, for shape.
	productsKey string
	req         alloc.Request
	gpus        float64 // per pod, a share as its fraction
	class       string
	// tier is the priority tier of its class (a borrowed class's tier);
	// scheduler the one its directives name.
	tier      string
	scheduler string
	value     int
	preempt   bool // preemptible, per its directives
	minPods   int
	level     string // required topology level's node label ("" none)
	levelName string
	preferred string
	// placement is where the tenant's placement rules confine it (its
	// directives'); nil when none do.
	placement *evaluator.Placement

	state      jobState
	started    float64
	firstStart float64
	startedOK  bool
	bindings   []alloc.Binding
	held       holdReason
	guaranteed bool
	runs       int // starts so far: a finish event is for the run it names
	// initial: a pod of the starting state, not of the trace (startedPod).
	initial    bool
	startedPod *corev1.Pod
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
	if len(supply.Pods) > 0 || len(supply.Owners) > 0 {
		if err := s.startState(supply.Pods, supply.Owners); err != nil {
			return nil, err
		}
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
		res = topology.DefaultGPUResource
	}
	j.keys = []string{res}
	if w.GPUProduct != "" {
		j.keys = append(j.keys, topology.ProductKey(res, w.GPUProduct))
	}
	j.productsKey = strings.Join(j.Products, "|")
	j.req = alloc.Request{CPUMilli: j.CPUMilli, MemoryMiB: j.MemoryMiB, GPUs: j.GPUsPerPod, GPUMilli: j.GPUMilli, Models: j.Products}
	if j.GPUMilli == 0 {
		j.req.GPUMilli = topology.MilliPerGPU
	}
	j.gpus = float64(j.GPUsPerPod)
	if j.req.Fractional() {
		j.gpus = float64(j.GPUMilli) / topology.MilliPerGPU
	}
	j.class, j.tier, j.scheduler = d.Directives.PriorityClass, d.Directives.TierName(), d.Directives.Scheduler
	j.value, _ = s.m.ClassValue(j.class)
	j.preempt = d.Directives.Preemptible
	j.minPods = j.Pods
	if d.Directives.GangMin > 0 && d.Directives.GangMin < j.Pods {
		j.minPods = d.Directives.GangMin
	}
	j.level, j.levelName, j.preferred = d.Directives.RequiredLabel, d.Directives.RequiredLevel, d.Directives.PreferredLevel
	j.placement = d.Directives.Placement
	s.state.LoadHolds([]*unstructured.Unstructured{j.obj}, s.svc.HoldOf)
	j.state = stateQueued
	s.queue = append(s.queue, j)
	return nil
}
