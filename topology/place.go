package topology

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// ErrInvalidRequest is wrapped by every error Place returns.
var ErrInvalidRequest = errors.New("invalid placement request")

// query is a validated Request.
type query struct {
	// pods counts the groups of pods that share devices (the pods
	// themselves when they take whole devices): perDevice pods share each
	// of a group's gpus devices.
	pods, gpus, perDevice int
	agg                   aggKey
	// required and preferred are level indexes; -1 is the whole cluster
	// for required and "none" for preferred.
	required, preferred int
}

// Place answers where the gang of req could go, by best fit: among the
// domains of the level holding all its pods now, the one with the fewest free
// GPUs of the wanted kind (the least stranded capacity), ties broken by the
// smaller domain key. When PreferredLevel is set and a domain of it inside a
// domain of RequiredLevel fits, the best of those is chosen instead.
//
// Pods that share devices (GPUShareMilli) are placed as groups of
// MilliPerGPU/GPUShareMilli pods on the same GPUsPerPod devices of one node: a
// gang of 16 pods at 250 needs 4 free devices, and its pod slots count
// 4 pods per device. This is exact for pods on one device each, and
// errs on the safe side for pods spread over several
// (gpu-fraction-num-devices), which could interleave more tightly.
//
// Resource "" means DefaultGPUResource; Product "" means any product. A gang
// with GPUsPerPod 0 needs no GPU: it fits now and empty, with no domain, and
// Score 1. BestNow and Largest are left zero when no domain has room for a
// single pod; the whole cluster is domain ClusterDomain at level "".
//
// The cost does not depend on the number of nodes: it walks the level's
// index of domains ordered by free GPUs from the first one that could hold
// the gang, and stops at the first that does.
func (s *Snapshot) Place(req Request) (Result, error) {
	q, err := s.validate(req)
	if err != nil {
		return Result{}, err
	}
	if q.gpus == 0 {
		return Result{FitsNow: true, FitsEmpty: true, Score: 1}, nil
	}
	v := s.aggs[q.agg]
	if v == nil {
		return Result{}, nil
	}
	res := Result{ClusterFree: v.clusterFree.sum, ClusterTotal: v.clusterAlloc.sum}
	var chosen *entry
	chosenLevel := ""
	if q.required < 0 {
		cluster := entry{sum: v.clusterFree.sum, key: ClusterDomain, hist: v.clusterFree}
		res.Largest = capacity(ClusterDomain, "", v.clusterAlloc.slots(q.gpus), v.clusterAlloc.sum)
		res.BestNow = capacity(ClusterDomain, "", v.clusterFree.slots(q.gpus), v.clusterFree.sum)
		if res.BestNow.PodSlots >= q.pods {
			chosen = &cluster
		}
	} else {
		name := s.levels[q.required].Name
		if e, n := mostSlots(v.alloc[q.required], q.gpus); e != nil {
			res.Largest = capacity(e.key, name, n, e.sum)
		}
		if e, n := mostSlots(v.free[q.required], q.gpus); e != nil {
			res.BestNow = capacity(e.key, name, n, e.sum)
		}
	}
	res.FitsEmpty = res.Largest.PodSlots >= q.pods
	fitsNow := res.BestNow.PodSlots >= q.pods
	if fitsNow && q.preferred > q.required {
		var skip uint32
		if q.required >= 0 {
			skip = 1 << q.required
		}
		if e, ok := bestFit(v.free[q.preferred], q.gpus, q.pods, skip); ok {
			chosen, chosenLevel = e, s.levels[q.preferred].Name
		}
	}
	if fitsNow && chosen == nil {
		chosen, _ = bestFit(v.free[q.required], q.gpus, q.pods, 0)
		chosenLevel = s.levels[q.required].Name
	}
	// Slots of groups are slots of their pods.
	res.Largest.PodSlots *= q.perDevice
	res.BestNow.PodSlots *= q.perDevice
	if chosen == nil {
		return res, nil
	}
	need := q.pods * q.gpus // cannot overflow: the domain holds that many GPUs
	res.FitsNow = true
	res.Domain, res.Level = chosen.key, chosenLevel
	res.Score = float64(need) / float64(chosen.sum)
	res.FreeAfter = chosen.sum - need
	return res, nil
}

// capacity is a DomainCapacity, zero when the domain has no pod slot.
func capacity(domain, level string, slots, gpus int) DomainCapacity {
	if slots == 0 {
		return DomainCapacity{}
	}
	return DomainCapacity{Domain: domain, Level: level, PodSlots: slots, GPUs: gpus}
}

// validate checks req against the snapshot's levels.
func (s *Snapshot) validate(req Request) (query, error) {
	fail := func(format string, args ...any) (query, error) {
		return query{}, fmt.Errorf("%w: "+format, append([]any{ErrInvalidRequest}, args...)...)
	}
	if s == nil {
		return fail("no snapshot")
	}
	if req.Pods < 1 {
		return fail("pods is %d, want at least 1", req.Pods)
	}
	if req.GPUsPerPod < 0 {
		return fail("gpusPerPod is %d, want 0 or more", req.GPUsPerPod)
	}
	if req.GPUShareMilli < 0 || req.GPUShareMilli > MilliPerGPU {
		return fail("gpuShareMilli is %d, want 0 to %d", req.GPUShareMilli, MilliPerGPU)
	}
	q := query{pods: req.Pods, gpus: req.GPUsPerPod, perDevice: 1, required: -1, preferred: -1}
	if req.GPUShareMilli > 0 {
		// Pods of a fraction pack onto shared devices of one node:
		// MilliPerGPU/share of them per device, so k pods need
		// ceil(k/that) groups of gpus devices.
		q.perDevice = MilliPerGPU / req.GPUShareMilli
		q.pods = (req.Pods + q.perDevice - 1) / q.perDevice
	}
	if req.RequiredLevel != "" {
		i, ok := s.levelIdx[req.RequiredLevel]
		if !ok {
			return fail("unknown requiredLevel %q (levels: %s)", req.RequiredLevel, s.levelNames())
		}
		q.required = i
	}
	if req.PreferredLevel != "" {
		i, ok := s.levelIdx[req.PreferredLevel]
		if !ok {
			return fail("unknown preferredLevel %q (levels: %s)", req.PreferredLevel, s.levelNames())
		}
		if i < q.required {
			return fail("preferredLevel %q is wider than requiredLevel %q", req.PreferredLevel, req.RequiredLevel)
		}
		q.preferred = i
	}
	if q.gpus == 0 {
		return q, nil
	}
	if q.pods > math.MaxInt/q.gpus {
		return fail("%d pods × %d GPUs is too large", q.pods, q.gpus)
	}
	q.agg = aggKey{resource: req.Resource, product: req.Product, pool: req.Pool}
	if q.agg.resource == "" {
		q.agg.resource = DefaultGPUResource
	}
	if !IsGPUResource(q.agg.resource) {
		return fail("resource %q is not a GPU resource (nvidia.com/gpu, nvidia.com/mig-*, amd.com/gpu)", req.Resource)
	}
	return q, nil
}

func (s *Snapshot) levelNames() string {
	names := make([]string, len(s.levels))
	for i, l := range s.levels {
		names[i] = l.Name
	}
	return strings.Join(names, ", ")
}
