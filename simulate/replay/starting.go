package replay

import (
	"container/heap"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/simulate/alloc"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// startState places the starting state (Supply.Pods): each pod bound to a known
// node and not finished runs there from time 0, as a job of one pod that
// is not part of the trace (its tenant's numbers count its GPU-hours, its
// preemptions and their loss, never a submission, a wait or a completion).
// It runs for Options.StartingRemaining seconds, or to the end when 0; a
// node failure stops it and it is queued again like any job. Owners' holds
// count in the decisions' state as a replica's informers count them.
func (s *sim) startState(pods []*corev1.Pod, owners []*unstructured.Unstructured) error {
	s.state.LoadHolds(owners, s.svc.HoldOf)
	sorted := append([]*corev1.Pod(nil), pods...)
	sort.Slice(sorted, func(a, b int) bool {
		if sorted[a].Namespace != sorted[b].Namespace {
			return sorted[a].Namespace < sorted[b].Namespace
		}
		return sorted[a].Name < sorted[b].Name
	})
	for _, p := range sorted {
		i, ok := s.nodeIndex[p.Spec.NodeName]
		if !ok || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		j := s.initialJob(p)
		b := alloc.Binding{Node: i}
		n := &s.c.Nodes[i]
		if j.GPUsPerPod > 0 {
			b.GPUs = n.WholeGPUs(j.GPUsPerPod, nil)
		}
		if err := s.c.Bind(j.req, b); err != nil {
			return fmt.Errorf("the starting state does not fit: pod %s/%s on %s: %w", p.Namespace, p.Name, n.Name, err)
		}
		s.state.UpsertPod(p)
		j.bindings = []alloc.Binding{b}
		j.startedPod = p
		s.jobs = append(s.jobs, j)
		j.state = stateRunning
		j.startedOK = true
		j.runs++
		s.count(j, 1)
		if s.o.StartingRemaining > 0 {
			heap.Push(&s.events, event{at: s.o.StartingRemaining, kind: evFinish, job: j, gen: j.runs})
		}
	}
	return nil
}

// initialJob is the job a starting pod stands for.
func (s *sim) initialJob(p *corev1.Pod) *job {
	gpus := topology.PodGPURequests(p)[topology.DefaultGPUResource]
	var cpu, mem int64
	for _, c := range p.Spec.Containers {
		cpu += c.Resources.Requests.Cpu().MilliValue()
		mem += c.Resources.Requests.Memory().Value() >> 20
	}
	tenant := s.namespace[p.Namespace]
	if tenant == "" {
		tenant = "(namespace " + p.Namespace + ")"
	}
	j := &job{Job: Job{Name: p.Namespace + "/" + p.Name, Namespace: p.Namespace, Pods: 1, GPUsPerPod: gpus, CPUMilli: cpu,
		MemoryMiB: mem, PriorityClass: p.Spec.PriorityClassName, Duration: s.o.StartingRemaining},
		seq: len(s.jobs), namespace: p.Namespace, tenant: tenant, chain: s.m.Chain(tenant), initial: true}
	j.keys = []string{topology.DefaultGPUResource}
	if prod := workload.PodProduct(&p.Spec); prod != "" {
		j.keys = append(j.keys, topology.ProductKey(topology.DefaultGPUResource, prod))
	}
	j.req = alloc.Request{CPUMilli: cpu, MemoryMiB: mem, GPUs: gpus, GPUMilli: topology.MilliPerGPU}
	j.gpus = float64(gpus)
	j.class = p.Spec.PriorityClassName
	j.tier, _, _ = s.m.TierOf(j.class)
	j.value, _ = s.m.ClassValue(j.class)
	j.preempt, j.minPods = s.m.PreemptibleClasses()[j.class], 1
	if j.Duration == 0 {
		j.Duration = 1e18 // to the end
	}
	return j
}
