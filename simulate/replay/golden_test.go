package replay

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/topology"
)

// embedded is the default authority model's evaluator (Helix Labs:
// research-llm, research-vision, product, platform).
func embedded(t testing.TB) *evaluator.Evaluator {
	t.Helper()
	p, err := evaluator.LoadFS(policies.FS, "embedded")
	require.NoError(t, err)
	ev, err := evaluator.New(context.Background(), p, evaluator.Options{})
	require.NoError(t, err)
	return ev
}

// gpuNode is an H100 node with the model's topology labels.
func gpuNode(name, clique string, gpus int) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU:          resource.MustParse("64"),
		corev1.ResourceMemory:       resource.MustParse("512Gi"),
		topology.DefaultGPUResource: *resource.NewQuantity(int64(gpus), resource.DecimalSI),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": "z1", "mandate.dev/spine-block": "s1",
			"mandate.dev/leaf-block": "b1", "nvidia.com/gpu.clique": clique, "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
		}},
		Status: corev1.NodeStatus{Allocatable: res, Capacity: res,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

// goldenSupply: n0 and n1, 8 GPUs each, in clique c0; n2, 1 GPU, in c1.
// 17 GPUs.
func goldenSupply() Supply {
	return Supply{Nodes: []*corev1.Node{gpuNode("n0", "c0", 8), gpuNode("n1", "c0", 8), gpuNode("n2", "c1", 1)}}
}

// goldenTrace is the hand-computed scenario of TestGolden.
var goldenTrace = []Job{
	{Name: "a", Submit: 0, Duration: 3600, Tenant: "research-llm", Pods: 1, GPUsPerPod: 8, PriorityClass: "train"},
	{Name: "b", Submit: 0, Duration: 3600, Tenant: "research-llm", Pods: 1, GPUsPerPod: 8, PriorityClass: "train"},
	{Name: "g", Submit: 0, Duration: 100000, Tenant: "platform", Pods: 1, GPUsPerPod: 1, PriorityClass: "build"},
	{Name: "c", Submit: 600, Duration: 3600, Tenant: "research-vision", Pods: 1, GPUsPerPod: 8, PriorityClass: "train"},
	{Name: "d", Submit: 1200, Duration: 1800, Tenant: "platform", Pods: 1, GPUsPerPod: 4, PriorityClass: "build"},
	{Name: "e", Submit: 1500, Duration: 600, Tenant: "research-vision", Pods: 1, GPUsPerPod: 1, PriorityClass: "inference"},
	{Name: "f", Submit: 1800, Duration: 3600, Tenant: "platform", Pods: 2, GPUsPerPod: 8, PriorityClass: "build"},
}

// TestGolden replays goldenTrace under the default model until 7200 s,
// sampling every 600 s, and checks every field against the timeline worked
// out by hand:
//
//	t=0     a → n0, b → n1 (8 GPUs each, train, node level), g → n2 (1 GPU,
//	        build: the placement evaluator's best fit is the 1-GPU node).
//	t=600   c (research-vision, 8, train) waits: no node has 8 free.
//	t=1200  d (platform, 4, build: not preemptible, 1+4 ≤ guarantee 8)
//	        finds no room and preempts: mayPreempt[build] has train; of
//	        a and b (same value, same start) a goes first. d → n0.
//	        a is queued again; it ran 8 GPUs × 1200 s = 2.667 GPU-h, lost.
//	t=1500  e asks for inference, which research-vision may not use:
//	        denied PRIORITY_NOT_ALLOWED.
//	t=1800  f (platform, 2 × 8, build) is admitted (over the guarantee:
//	        turned preemptible) but platform's ceiling is 16 and g and d
//	        run 5: room for 1 pod of 8 < 2, held by authority — and once
//	        d ends, g's 1 still leaves 15 < 16: it never starts.
//	t=3000  d ends (completed). n0 has 8 free: a (train, submitted at 0,
//	        before c) restarts on n0. Its wait stays 0 (first start).
//	t=3600  b ends. c → n1: waited 3600 - 600 = 3000 s.
//	t=6600  a ends (3000 + 3600).
//	t=7200  c ends (3600 + 3600); the simulation stops.
//
// Per tenant:
//
//	research-llm: 2 submitted, 2 admitted, 2 completed; waits 0, 0 (p50,
//	  p95, max 0); GPU-h a 8×1200s + 8×3600s = 2.667 + 8, b 8×3600s = 8:
//	  18.667; guaranteed 96 × 2 h = 192; 1 preemption, 2.667 GPU-h lost.
//	research-vision: 2 submitted, 1 admitted, 1 denied
//	  (PRIORITY_NOT_ALLOWED), 1 completed; waits [3000]: p50 = p95 = max
//	  = 3000; GPU-h 8 × 1 h = 8; guaranteed 16 × 2 = 32.
//	platform: 3 submitted, 3 admitted, 1 completed (d), 1 never started
//	  (f, authority); waits g 0, d 0; GPU-h d 4 × 0.5 + g 1 × 2 = 4;
//	  guaranteed 8 × 2 = 16.
//	guaranteed (build and inference: d, e, f, g): 4 submitted, 3 admitted,
//	  1 denied, 1 completed, 1 never started (authority); waits 0, 0.
//
// Cluster: 17 GPUs; allocated 18.667 + 8 + 4 = 30.667 GPU-h of 34:
// 90.196%; idle 34 - 30.667 = 3.333. Stranded, from the samples (each
// taken before the events of its time, holding until the next): at 1800,
// 2400 and 3000 n0 has 4 free GPUs and every waiting pod asks 8, so 4
// stranded; at 3600 nothing is free; at 7200 n0's 8 free fit f's pod: 0.
// 4 GPUs × 1800 s = 2 GPU-h. The largest startable gang is 17 at t=0 (every
// node empty) and 0 from 600 on: 0.
func TestGolden(t *testing.T) {
	ev := embedded(t)
	r, err := Run(context.Background(), goldenTrace, goldenSupply(), Options{Decider: ev, Model: ev.Model(),
		Revision: "golden", SampleEvery: 600, Until: 7200})
	require.NoError(t, err)
	h := 1.0 / 3600
	want := []TenantStats{
		{Tenant: "platform", Submitted: 3, Admitted: 3, Completed: 1, NeverStarted: 1, HeldByAuthority: 1,
			GPUHoursUsed: 4, GPUHoursGuaranteed: 16, DeniedBy: map[string]int{}},
		{Tenant: "research-llm", Submitted: 2, Admitted: 2, Completed: 2, GPUHoursUsed: 8*1200*h + 8 + 8,
			GPUHoursGuaranteed: 192, Preemptions: 1, GPUHoursLost: 8 * 1200 * h, DeniedBy: map[string]int{}},
		{Tenant: "research-vision", Submitted: 2, Admitted: 1, Denied: 1, DeniedBy: map[string]int{"PRIORITY_NOT_ALLOWED": 1},
			Completed: 1, WaitP50: 3000, WaitP95: 3000, WaitMax: 3000, GPUHoursUsed: 8, GPUHoursGuaranteed: 32},
	}
	require.Equal(t, roundTenants(want), roundTenants(r.Tenants))
	wantG := TenantStats{Tenant: "guaranteed", Submitted: 4, Admitted: 3, Denied: 1, DeniedBy: map[string]int{"PRIORITY_NOT_ALLOWED": 1},
		Completed: 1, NeverStarted: 1}
	require.Equal(t, roundTenants([]TenantStats{wantG}), roundTenants([]TenantStats{r.Guaranteed}))
	alloc := 8*1200*h + 8 + 8 + 8 + 4
	wantC := ClusterStats{GPUs: 17, AllocatedGPUHours: alloc, IdleGPUHours: 34 - alloc, StrandedGPUHours: 2,
		MeanAllocation: 100 * alloc / 34, MinLargestGang: 0}
	require.Equal(t, roundCluster(wantC), roundCluster(r.Cluster))
	require.Equal(t, 7200.0, r.End)
	require.Equal(t, 7, r.Jobs)
	require.Len(t, r.Series, 13, "samples at 0, 600, …, 7200")
	require.Equal(t, 17, r.Series[0].LargestGang)
	require.Equal(t, map[string]float64{"research-llm": 8, "platform": 5}, r.Series[3].Allocated, "at 1800: b, g and d")
	require.Equal(t, 4.0, r.Series[3].Stranded)
	require.Equal(t, 4.0, r.Series[3].Idle, "n0's 4 left by d")
	require.Equal(t, 0.0, r.Series[3].Down)
	require.Equal(t, 1800.0, r.Series[3].At)
	require.Equal(t, "golden", r.Revision)
	require.Equal(t, PlacementTopology, r.Placement)
}

// round6 rounds to a millionth: hand-computed hours are thirds.
func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

func roundTenants(ts []TenantStats) []TenantStats {
	out := slices.Clone(ts)
	for i := range out {
		t := &out[i]
		t.WaitP50, t.WaitP95, t.WaitMax = round6(t.WaitP50), round6(t.WaitP95), round6(t.WaitMax)
		t.GPUHoursUsed, t.GPUHoursGuaranteed, t.GPUHoursLost = round6(t.GPUHoursUsed), round6(t.GPUHoursGuaranteed), round6(t.GPUHoursLost)
	}
	return out
}

func roundCluster(c ClusterStats) ClusterStats {
	c.AllocatedGPUHours, c.IdleGPUHours, c.StrandedGPUHours = round6(c.AllocatedGPUHours), round6(c.IdleGPUHours), round6(c.StrandedGPUHours)
	c.DownGPUHours, c.MeanAllocation = round6(c.DownGPUHours), round6(c.MeanAllocation)
	return c
}

// TestNodeFailure: one 8-GPU node; a (8 GPUs, train) runs from 0 for
// 3600 s; the node fails at 1800 and is repaired at 2400. a is stopped at
// 1800 (8 × 1800 s = 4 GPU-h lost, one preemption counted), waits while
// the node is down and starts again at 2400, ending at 6000. The decisions
// see the failed node unhealthy: b, submitted at 2000 for 8 GPUs, is
// denied TOPOLOGY_NEVER_FITS — no healthy node could ever hold it then.
// Used 4 + 8 = 12 GPU-h; down 8 × 600 s = 1.333 GPU-h; all GPU-hours
// 8 × 6000 s = 13.333, so idle 13.333 − 12 − 1.333 = 0; guaranteed 96 ×
// 6000 s = 160 GPU-h.
func TestNodeFailure(t *testing.T) {
	ev := embedded(t)
	supply := Supply{Nodes: []*corev1.Node{gpuNode("n0", "c0", 8)}}
	trace := []Job{
		{Name: "a", Submit: 0, Duration: 3600, Tenant: "research-llm", Pods: 1, GPUsPerPod: 8, PriorityClass: "train"},
		{Name: "b", Submit: 2000, Duration: 3600, Tenant: "research-llm", Pods: 1, GPUsPerPod: 8, PriorityClass: "train"},
	}
	r, err := Run(context.Background(), trace, supply, Options{Decider: ev, Model: ev.Model(), SampleEvery: 600,
		Events: []NodeEvent{{At: 1800, Node: "n0", Action: ActionFail}, {At: 2400, Node: "n0", Action: ActionRepair}}})
	require.NoError(t, err)
	want := []TenantStats{{Tenant: "research-llm", Submitted: 2, Admitted: 1, Denied: 1, DeniedBy: map[string]int{"TOPOLOGY_NEVER_FITS": 1},
		Completed: 1, GPUHoursUsed: 12, GPUHoursGuaranteed: 160, Preemptions: 1, GPUHoursLost: 4}}
	require.Equal(t, roundTenants(want), roundTenants(r.Tenants))
	require.Equal(t, 6000.0, r.End)
	require.InDelta(t, 8*600/3600.0, r.Cluster.DownGPUHours, 1e-9)
	require.InDelta(t, 0, r.Cluster.IdleGPUHours, 1e-9)
	require.Equal(t, 8.0, r.Series[4].Down, "the sample at 2400 is taken before the repair")
	require.Equal(t, 0.0, r.Series[5].Down)
}

// TestHoldsFollowJobs: an admitted job's hold counts its demand in the
// state the decisions read — while it waits and runs, with its pods
// counted under it once — and leaves with it.
func TestHoldsFollowJobs(t *testing.T) {
	ev := embedded(t)
	trace := []Job{{Name: "a", Submit: 0, Duration: 3600, Tenant: "research-llm", Pods: 1, GPUsPerPod: 8, PriorityClass: "train"}}
	for _, tc := range []struct {
		until float64
		want  int
	}{{until: 1800, want: 8}, {until: 0, want: 0}} {
		s, err := newSim(trace, goldenSupply(), Options{Decider: ev, Model: ev.Model(), Until: tc.until})
		require.NoError(t, err)
		require.NoError(t, s.run(context.Background()))
		u := s.state.Usage("research-llm")["research-llm"][topology.DefaultGPUResource]
		require.Equal(t, tc.want, u.Total, "until %g", tc.until)
	}
}

// TestStartingState: a running pod of the starting state (platform, 4 GPUs
// on n0, 1800 s left) holds its node and its tenant's usage: a, 8 GPUs at
// node level at 0, waits for it on a one-node cluster and starts at 1800
// (wait 1800); platform used 4 × 0.5 h = 2 GPU-h without submitting
// anything; a's 8 × 1 h = 8.
func TestStartingState(t *testing.T) {
	ev := embedded(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "notebook", Namespace: "platform"},
		Spec: corev1.PodSpec{NodeName: "n0", PriorityClassName: "build", Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{topology.DefaultGPUResource: resource.MustParse("4")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	supply := Supply{Nodes: []*corev1.Node{gpuNode("n0", "c0", 8)}, Pods: []*corev1.Pod{pod}}
	trace := []Job{{Name: "a", Submit: 0, Duration: 3600, Tenant: "research-llm", Pods: 1, GPUsPerPod: 8, PriorityClass: "train"}}
	s, err := newSim(trace, supply, Options{Decider: ev, Model: ev.Model(), StartingRemaining: 1800})
	require.NoError(t, err)
	require.Equal(t, 4, s.state.Usage("platform")["platform"][topology.DefaultGPUResource].Total, "the pod counts in the decisions' state")
	require.NoError(t, s.run(context.Background()))
	r := s.report()
	require.Equal(t, 1, r.Jobs, "the starting pod is not a trace job")
	want := []TenantStats{
		{Tenant: "platform", GPUHoursUsed: 2, GPUHoursGuaranteed: 8 * 5400 / 3600.0, DeniedBy: map[string]int{}},
		{Tenant: "research-llm", Submitted: 1, Admitted: 1, Completed: 1, WaitP50: 1800, WaitP95: 1800, WaitMax: 1800,
			GPUHoursUsed: 8, GPUHoursGuaranteed: 96 * 5400 / 3600.0, DeniedBy: map[string]int{}},
	}
	require.Equal(t, roundTenants(want), roundTenants(r.Tenants))
	require.Equal(t, 0, s.state.Usage("platform")["platform"][topology.DefaultGPUResource].Total, "ended")
}
