// Package fgd runs the evaluation protocol of the FGD paper (Weng et al.,
// "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
// Fragmentation Gradient Descent", USENIX ATC'23) on any node and pod list:
// tasks arrive one by one on the empty cluster and stay; each is placed by
// a placement policy (simulate/placement) or fails; and after every whole
// percent of arrived GPU demand the share of all GPUs allocated is
// recorded, per seed, then summarised over the seeds. It is the simulator's
// fidelity check against a published number (`mandate simulate fgd`).
package fgd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/mandate-dev/mandate/simulate/alloc"
	"github.com/mandate-dev/mandate/simulate/placement"
	"github.com/mandate-dev/mandate/topology"
)

// The paper's setting: ten seeds, and arrivals until the GPU demand is
// 130% of the cluster's GPUs.
const (
	DefaultInflate = 1.3
	DefaultSeeds   = "42-51"
)

// Options say how the protocol runs.
type Options struct {
	// Policy is a registered placement policy (placement.Names).
	Policy string
	// Seeds are the runs: each seed orders the tasks and draws the
	// policy's choices among equals.
	Seeds []int64
	// Inflate is the arrived GPU demand, as a multiple of the cluster's
	// GPUs, at which arrivals stop (1.3 in the paper).
	Inflate float64
	// Parallel is how many seeds run at once; 0, one per CPU.
	Parallel int
}

// Result is the protocol's outcome over all seeds.
type Result struct {
	Policy  string  `json:"policy"`
	Seeds   []int64 `json:"seeds"`
	Inflate float64 `json:"inflate"`
	Nodes   int     `json:"nodes"`
	GPUs    int     `json:"gpus"`
	// Pods is the number of tasks in the pod list the arrivals draw from.
	Pods int `json:"pods"`
	// Tasks sums the arrived, placed and failed tasks over the seeds.
	Tasks Tasks `json:"tasks"`
	// Runs is each seed's outcome.
	Runs []SeedRun `json:"runs"`
	// Points has one entry per whole percent of arrived GPU demand, from
	// 0 to 100 × Inflate.
	Points []Point `json:"points"`
}

// Tasks counts tasks: arrived = placed + failed.
type Tasks struct {
	Arrived int `json:"arrived"`
	Placed  int `json:"placed"`
	Failed  int `json:"failed"`
}

// SeedRun is one seed's outcome.
type SeedRun struct {
	Seed  int64 `json:"seed"`
	Tasks Tasks `json:"tasks"`
	// ArrivedGPUPercent and AllocatedGPUPercent are the arrived GPU demand
	// and the GPUs allocated at the end, in percent of all GPUs.
	ArrivedGPUPercent   float64 `json:"arrivedGPUPercent"`
	AllocatedGPUPercent float64 `json:"allocatedGPUPercent"`
}

// Point is the allocation once the arrived GPU demand first reached
// Arrived percent of all GPUs.
type Point struct {
	Arrived   int  `json:"arrived"`
	Allocated Stat `json:"allocated"`
}

// Stat is a value over the seeds, in percent of all GPUs.
type Stat struct {
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

// Random streams of a seed: the order of arrivals, and the policy's draws.
// Separate, so that every policy sees the same arrivals for a seed.
const (
	streamArrivals = 1
	streamPolicy   = 2
)

// Run runs the protocol on an empty cluster of nodes, drawing arrivals
// from tasks: each seed shuffles the task list and lets it arrive in that
// order, then draws further tasks uniformly (with replacement), until the
// arrived GPU demand reaches Inflate times the cluster's GPUs. A task that
// fits nowhere fails and arrivals go on; nothing departs.
func Run(ctx context.Context, nodes []alloc.NodeSpec, tasks []alloc.Request, o Options) (*Result, error) {
	if _, err := placement.Lookup(o.Policy); err != nil {
		return nil, err
	}
	if len(o.Seeds) == 0 {
		return nil, errors.New("no seeds to run")
	}
	if !(o.Inflate > 0) || o.Inflate > 100 {
		return nil, fmt.Errorf("inflate %g: want the arrived GPU demand as a positive multiple of the cluster's GPUs, such as 1.3", o.Inflate)
	}
	probe, err := alloc.New(nodes)
	if err != nil {
		return nil, err
	}
	if probe.GPUMilli == 0 {
		return nil, errors.New("the nodes have no GPUs")
	}
	var demand int64
	for _, t := range tasks {
		demand += t.GPUMilliTotal()
	}
	if demand == 0 {
		return nil, errors.New("the pod list asks for no GPUs: its arrivals never reach a GPU demand")
	}
	percents := int(math.Floor(o.Inflate*100 + 1e-9))
	p := protocol{
		nodes:    nodes,
		tasks:    tasks,
		policy:   o.Policy,
		capacity: probe.GPUMilli,
		target:   int64(math.Ceil(o.Inflate*float64(probe.GPUMilli) - 1e-6)),
		percents: percents,
	}

	runs := make([]SeedRun, len(o.Seeds))
	curves := make([][]float64, len(o.Seeds))
	errs := make([]error, len(o.Seeds))
	parallel := o.Parallel
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, seed := range o.Seeds {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			runs[i], curves[i], errs[i] = p.run(ctx, seed)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	res := &Result{
		Policy: o.Policy, Seeds: o.Seeds, Inflate: o.Inflate,
		Nodes: len(nodes), GPUs: int(probe.GPUMilli / topology.MilliPerGPU), Pods: len(tasks),
		Runs: runs, Points: make([]Point, percents+1),
	}
	for _, r := range runs {
		res.Tasks.Arrived += r.Tasks.Arrived
		res.Tasks.Placed += r.Tasks.Placed
		res.Tasks.Failed += r.Tasks.Failed
	}
	for k := range res.Points {
		s := Stat{Min: math.Inf(1), Max: math.Inf(-1)}
		for _, c := range curves {
			s.Mean += c[k]
			s.Min = min(s.Min, c[k])
			s.Max = max(s.Max, c[k])
		}
		s.Mean /= float64(len(curves))
		res.Points[k] = Point{Arrived: k, Allocated: s}
	}
	return res, nil
}

// protocol is one Run's setting, shared read-only by its seeds.
type protocol struct {
	nodes    []alloc.NodeSpec
	tasks    []alloc.Request
	policy   string
	capacity int64 // all GPUs, thousandths
	target   int64 // arrived demand at which arrivals stop, thousandths
	percents int   // the last point
}

// run is one seed: its outcome, and the allocated percent of all GPUs at
// each point.
func (p *protocol) run(ctx context.Context, seed int64) (SeedRun, []float64, error) {
	c, err := alloc.New(p.nodes)
	if err != nil {
		return SeedRun{}, nil, err
	}
	arrivals := rand.New(rand.NewPCG(uint64(seed), streamArrivals))
	policy, err := placement.New(p.policy, rand.New(rand.NewPCG(uint64(seed), streamPolicy)))
	if err != nil {
		return SeedRun{}, nil, err
	}
	curve := make([]float64, p.percents+1) // point 0: nothing arrived, nothing allocated
	next := 1
	order := arrivals.Perm(len(p.tasks))
	run := SeedRun{Seed: seed}
	var arrived int64
	for i := 0; arrived < p.target; i++ {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return SeedRun{}, nil, err
			}
		}
		var t alloc.Request
		if i < len(order) {
			t = p.tasks[order[i]]
		} else {
			t = p.tasks[arrivals.IntN(len(p.tasks))]
		}
		arrived += t.GPUMilliTotal()
		run.Tasks.Arrived++
		if b, ok := policy.Place(c, t); ok {
			if err := c.Bind(t, b); err != nil {
				return SeedRun{}, nil, fmt.Errorf("seed %d: policy %s chose a node that does not hold the task: %w", seed, p.policy, err)
			}
			run.Tasks.Placed++
		} else {
			run.Tasks.Failed++
		}
		for next <= p.percents && arrived*100 >= int64(next)*p.capacity {
			curve[next] = p.percent(c.AllocatedGPUMilli())
			next++
		}
	}
	run.ArrivedGPUPercent = p.percent(arrived)
	run.AllocatedGPUPercent = p.percent(c.AllocatedGPUMilli())
	return run, curve, nil
}

func (p *protocol) percent(milli int64) float64 {
	return float64(milli) * 100 / float64(p.capacity)
}
