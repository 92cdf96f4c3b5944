//go:build benchscale

package authoritymetrics_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/mandate-dev/mandate/audit"
	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/clusterreport"
	"github.com/mandate-dev/mandate/explain"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/topology/topologytest"
)

// TestReportHeapAtScale (run by hand: go test -tags benchscale
// ./authoritymetrics/ -run TestReportHeapAtScale -v) builds one cluster
// report over 12,500 nodes and BENCH_SCALE_HEAP_PODS (150,000) running pods
// of Jobs of 8, as the loop now holds them (PodFacts, stripped nodes), and,
// over BENCH_SCALE_WHOLE_PODS (20,000) pods, both as the loop held them
// before (whole unstructured objects, every pod decided) and as it holds
// them now; it reports the peak heap (HeapAlloc sampled every 5 ms) of
// each inventory and its report above the heap before them. The synthetic pods carry no
// managedFields and no kubelet status: real pods weigh more unstructured.
func TestReportHeapAtScale(t *testing.T) {
	count := func(name string, def int) int {
		if v := os.Getenv(name); v != "" {
			_, err := fmt.Sscan(v, &def)
			require.NoError(t, err)
		}
		return def
	}
	pods, whole := count("BENCH_SCALE_HEAP_PODS", 150_000), count("BENCH_SCALE_WHOLE_PODS", 20_000)
	ev := fixtures.Evaluator(t, "embedded", nil)
	o := clusterreport.Options{Options: explain.Options{Decider: ev, Model: ev.Model(), Revision: ev.Revision()}}
	for _, run := range []struct {
		pods    int
		counted bool
	}{{whole, false}, {whole, true}, {pods, true}} {
		if run.pods == 0 {
			continue
		}
		peak, took := peakHeap(t, func() {
			inv := inventory(t, run.pods, run.counted)
			_, err := clusterreport.Build(context.Background(), inv, nil, o)
			require.NoError(t, err)
		})
		what := "whole unstructured, every pod decided"
		if run.counted {
			what = "counted only"
		}
		t.Logf("%d nodes, %d pods, %s: inventory and report peak heap +%d MiB (%d B/pod), %s", 12_500, run.pods, what, peak>>20, peak/uint64(run.pods), took.Round(time.Millisecond))
	}
}

// inventory is 12,500 nodes and pods running pods of Jobs of 8, as
// ListCounted keeps them (counted) or List does.
func inventory(t *testing.T, pods int, counted bool) *inventory.Inventory {
	t.Helper()
	inv := &inventory.Inventory{Source: "synthetic"}
	add := func(obj any, gvk string) *unstructured.Unstructured {
		u, err := kruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
		require.NoError(t, err)
		out := &unstructured.Unstructured{Object: u}
		out.SetAPIVersion("v1")
		out.SetKind(gvk)
		return out
	}
	const nodes = 12_500
	for i := range nodes {
		n := fixtures.H100Node(fmt.Sprintf("gpu-%05d", i), fmt.Sprintf("b%d", i/32), fmt.Sprintf("c%d", i/4))
		if counted {
			n = cluster.StripNode(n)
		}
		inv.Nodes = append(inv.Nodes, add(n, "Node"))
	}
	for i := range 10 {
		inv.Namespaces = append(inv.Namespaces, add(fixtures.TenantNamespace(fmt.Sprintf("team-%d", i), "research-llm"), "Namespace"))
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
		if counted {
			inv.Facts = append(inv.Facts, cluster.CompactPod(p))
		} else {
			inv.Pods = append(inv.Pods, add(p, "Pod"))
		}
	}
	return inv
}

// peakHeap runs f and returns the highest HeapAlloc seen meanwhile above
// the live heap before it, and how long f took.
func peakHeap(t *testing.T, f func()) (uint64, time.Duration) {
	t.Helper()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	f()
	took := time.Since(start)
	close(done)
	wg.Wait()
	return peak - base, took
}
