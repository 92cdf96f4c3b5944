//go:build benchscale

package cluster

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/topology/topologytest"
)

// TestHeapAtScale (make bench-scale's companion, run by hand:
// go test -tags benchscale ./cluster/ -run TestHeapAtScale -v) holds what
// serve's informers and State hold at the reference scale — 12,500 nodes
// and BENCH_SCALE_HEAP_PODS (150,000) stripped pods, plus the State fed
// from them — and reports the live heap, split into the stored objects and
// the State. With BENCH_SCALE_HEAP_PROFILE=file it writes a heap profile.
func TestHeapAtScale(t *testing.T) {
	pods := 150_000
	if v := os.Getenv("BENCH_SCALE_HEAP_PODS"); v != "" {
		if _, err := fmt.Sscan(v, &pods); err != nil {
			t.Fatal(err)
		}
	}
	const nodes = 12_500
	m := fixtures.Evaluator(t, "embedded", nil).Model()
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := live()
	var storedNodes []*corev1.Node
	var storedPods []*PodFacts
	for i := range nodes {
		storedNodes = append(storedNodes, StripNode(fixtures.H100Node(fmt.Sprintf("gpu-%05d", i), fmt.Sprintf("b%d", i/32), fmt.Sprintf("c%d", i/4))))
	}
	for i := range pods {
		p := topologytest.GPUPod(fmt.Sprintf("team-%d", i%10), fmt.Sprintf("batch-%d-%07d", i/8, i), 1,
			topologytest.OnNode(fmt.Sprintf("gpu-%05d", i/8%nodes)), topologytest.InPhase(corev1.PodRunning), topologytest.WithPriorityClass("train"))
		uid := types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i/8))
		p.UID = types.UID(fmt.Sprintf("10000000-0000-4000-8000-%012d", i))
		p.ResourceVersion = fmt.Sprint(1000 + i)
		p.Labels = map[string]string{"app.kubernetes.io/name": "trainer", "batch.kubernetes.io/job-name": fmt.Sprintf("batch-%d", i/8),
			"job-name": fmt.Sprintf("batch-%d", i/8), "batch.kubernetes.io/controller-uid": string(uid), "controller-uid": string(uid),
			"batch.kubernetes.io/job-completion-index": fmt.Sprint(i % 8)}
		p.Annotations = map[string]string{"batch.kubernetes.io/job-completion-index": fmt.Sprint(i % 8)}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: fmt.Sprintf("batch-%d", i/8), UID: uid,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		storedPods = append(storedPods, CompactPod(p))
	}
	objects := live() - base
	s, err := New(m)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		s.UpsertNamespace(fixtures.TenantNamespace(fmt.Sprintf("team-%d", i), "research-llm"))
	}
	for _, n := range storedNodes {
		s.UpsertNode(n)
	}
	fed := time.Now()
	for _, p := range storedPods {
		s.UpsertFacts(p)
	}
	_ = s.Snapshot()
	t.Logf("fed %d pods in %s", len(storedPods), time.Since(fed))
	state := live() - base - objects
	t.Logf("%d nodes, %d pods: stored stripped objects %d MiB (%d B/pod), State (ledger, topology) %d MiB (%d B/pod)",
		nodes, pods, objects>>20, objects/uint64(nodes+pods), state>>20, state/uint64(pods))
	if path := os.Getenv("BENCH_SCALE_HEAP_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			t.Fatal(err)
		}
	}
	runtime.KeepAlive(storedNodes)
	runtime.KeepAlive(storedPods)
	runtime.KeepAlive(s)
}
