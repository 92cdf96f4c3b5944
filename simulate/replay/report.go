package replay

import (
	"math"
	"slices"
	"sort"

	"github.com/mandate-dev/mandate/topology"
)

// Report is one simulation's outcome.
type Report struct {
	Revision  string `json:"revision"`
	Placement string `json:"placement"`
	Jobs      int    `json:"jobs"`
	// End is the simulated time the last job ended or was left waiting
	// (seconds).
	End     float64       `json:"end"`
	Tenants []TenantStats `json:"tenants"`
	// Guaranteed is the same counts over the jobs of a priority class that
	// is not preemptible, every tenant together.
	Guaranteed TenantStats  `json:"guaranteed"`
	Cluster    ClusterStats `json:"cluster"`
	Series     []Sample     `json:"series"`
}

// TenantStats is one tenant's outcome. Waits are from submit to the first
// start, over the jobs that started, in seconds.
type TenantStats struct {
	Tenant    string         `json:"tenant"`
	Submitted int            `json:"submitted"`
	Admitted  int            `json:"admitted"`
	Denied    int            `json:"denied"`
	DeniedBy  map[string]int `json:"deniedBy,omitempty"`
	Completed int            `json:"completed"`
	// NeverStarted are admitted jobs still waiting at the end: held by
	// authority (the tenant chain's ceiling) or by capacity.
	NeverStarted       int     `json:"neverStarted"`
	HeldByAuthority    int     `json:"heldByAuthority"`
	HeldByCapacity     int     `json:"heldByCapacity"`
	WaitP50            float64 `json:"waitP50"`
	WaitP95            float64 `json:"waitP95"`
	WaitMax            float64 `json:"waitMax"`
	GPUHoursUsed       float64 `json:"gpuHoursUsed"`
	GPUHoursGuaranteed float64 `json:"gpuHoursGuaranteed"`
	Preemptions        int     `json:"preemptions"`
	GPUHoursLost       float64 `json:"gpuHoursLost"`
}

// ClusterStats is the cluster's outcome over the simulation.
type ClusterStats struct {
	GPUs float64 `json:"gpus"`
	// AllocatedGPUHours are the GPU-hours jobs held; IdleGPUHours the
	// healthy GPUs' free GPU-hours; StrandedGPUHours the idle GPU-hours on
	// nodes where no waiting job's pod fits while GPU work waits (from the
	// samples); DownGPUHours those of failed nodes.
	AllocatedGPUHours float64 `json:"allocatedGPUHours"`
	IdleGPUHours      float64 `json:"idleGPUHours"`
	StrandedGPUHours  float64 `json:"strandedGPUHours"`
	DownGPUHours      float64 `json:"downGPUHours"`
	// MeanAllocation is AllocatedGPUHours over all GPU-hours, percent.
	MeanAllocation float64 `json:"meanAllocation"`
	// MinLargestGang is the smallest, over the samples, of the largest
	// whole-GPU gang that could start.
	MinLargestGang int `json:"minLargestGang"`
}

// Sample is the cluster at one time: GPUs allocated per tenant, idle,
// stranded and down GPUs, and the largest gang that could start: the whole
// GPUs of the nodes with every GPU free, on healthy nodes.
type Sample struct {
	At          float64            `json:"at"`
	Allocated   map[string]float64 `json:"allocated"`
	Idle        float64            `json:"idle"`
	Stranded    float64            `json:"stranded"`
	Down        float64            `json:"down"`
	LargestGang int                `json:"largestGang"`
}

type tenantAcc struct {
	TenantStats
	waits    []float64
	gpuHours float64
}

func newTenantAcc(t string) *tenantAcc {
	return &tenantAcc{TenantStats: TenantStats{Tenant: t, DeniedBy: map[string]int{}}}
}

func (a *tenantAcc) deny(codes []string) {
	a.Denied++
	for _, c := range slices.Compact(slices.Sorted(slices.Values(codes))) {
		a.DeniedBy[c]++
	}
}

type seriesAcc struct {
	samples  []Sample
	stranded float64 // GPUs stranded at the last sample
	alloc    float64
	idle     float64
	down     float64
}

// integrate adds dt hours of the cluster as it is.
func (a *seriesAcc) integrate(s *sim, dt float64) {
	allocated := float64(s.c.AllocatedGPUMilli()) / topology.MilliPerGPU
	down := s.downGPUs
	allocated -= down // a failed node is held by its blocker
	total := float64(s.c.GPUMilli) / topology.MilliPerGPU
	a.alloc += allocated * dt
	a.down += down * dt
	a.idle += (total - allocated - down) * dt
	a.stranded += a.lastStranded() * dt
}

func (a *seriesAcc) lastStranded() float64 {
	if len(a.samples) == 0 {
		return 0
	}
	return a.samples[len(a.samples)-1].Stranded
}

// sample records the cluster now.
func (s *sim) sample() {
	sm := Sample{At: s.now, Allocated: map[string]float64{}}
	for t, g := range s.runningGPUs {
		if g > 1e-9 {
			sm.Allocated[t] = g
		}
	}
	var waiting []*job
	seen := map[shape]bool{}
	for _, j := range s.queue {
		if sh := shapeOf(j, 1); j.gpus > 0 && !seen[sh] {
			seen[sh] = true
			waiting = append(waiting, j)
		}
	}
	for i := range s.c.Nodes {
		n := &s.c.Nodes[i]
		if s.down[i] {
			sm.Down += float64(n.GPUs)
			continue
		}
		free := float64(n.FreeGPUMilliTotal()) / topology.MilliPerGPU
		sm.Idle += free
		if n.WholeFreeGPUs() == n.GPUs {
			sm.LargestGang += n.GPUs
		}
		if free == 0 || len(waiting) == 0 {
			continue
		}
		fits := false
		for _, j := range waiting {
			if n.Fits(j.req) {
				fits = true
				break
			}
		}
		if !fits {
			sm.Stranded += free
		}
	}
	s.series.samples = append(s.series.samples, sm)
}

// report assembles the outcome.
func (s *sim) report() *Report {
	r := &Report{Revision: s.o.Revision, Placement: s.o.Placement, Jobs: len(s.jobs), End: s.now, Series: s.series.samples}
	r.Jobs = 0
	for _, j := range s.jobs {
		if !j.initial {
			r.Jobs++
		}
		if j.state != stateQueued || j.initial {
			continue
		}
		a := s.acc(j.tenant)
		a.NeverStarted++
		if j.guaranteed {
			s.guar.NeverStarted++
		}
		if j.held == heldAuthority {
			a.HeldByAuthority++
		} else {
			a.HeldByCapacity++
		}
	}
	hours := s.now / 3600
	for _, a := range s.stats {
		a.finish()
		if l, ok := s.m.QuotaOf(a.Tenant, topology.DefaultGPUResource, ""); ok {
			a.GPUHoursGuaranteed = float64(l.Guaranteed) * hours
		}
		r.Tenants = append(r.Tenants, a.TenantStats)
	}
	sort.Slice(r.Tenants, func(a, b int) bool { return r.Tenants[a].Tenant < r.Tenants[b].Tenant })
	s.guar.finish()
	r.Guaranteed = s.guar.TenantStats
	c := &r.Cluster
	c.GPUs = float64(s.c.GPUMilli) / topology.MilliPerGPU
	c.AllocatedGPUHours, c.IdleGPUHours, c.DownGPUHours = s.series.alloc, s.series.idle, s.series.down
	c.StrandedGPUHours = s.series.stranded
	if all := c.GPUs * hours; all > 0 {
		c.MeanAllocation = 100 * c.AllocatedGPUHours / all
	}
	c.MinLargestGang = math.MaxInt
	for _, sm := range r.Series {
		c.MinLargestGang = min(c.MinLargestGang, sm.LargestGang)
	}
	if len(r.Series) == 0 {
		c.MinLargestGang = 0
	}
	return r
}

func (a *tenantAcc) finish() {
	a.GPUHoursUsed = a.gpuHours
	w := slices.Sorted(slices.Values(a.waits))
	a.WaitP50, a.WaitP95 = percentile(w, 50), percentile(w, 95)
	if len(w) > 0 {
		a.WaitMax = w[len(w)-1]
	}
}

// percentile is the nearest-rank percentile of sorted values: the value
// at rank ceil(p/100 × n); 0 for none.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}
