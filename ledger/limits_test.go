package ledger

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// TestUsageWithoutIsTheUsageAfterRelease: the view of a workload decided
// again is, in one read, what Usage answers once its reservation is
// released, in every tenant of the chain and for the part of the
// reservation its pods have not consumed yet; nothing is released.
func TestUsageWithoutIsTheUsageAfterRelease(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	l.UpsertPod(gpuPod("p", "running", "build", 4, corev1.PodRunning, nil))
	key := WorkloadKey("v1", "Pod", "p", "a")
	l.Reserve(key, "product", map[string]int{"nvidia.com/gpu": 8}, false, time.Minute)
	l.Reserve("other", "product", map[string]int{"nvidia.com/gpu": 2}, true, time.Minute)

	without := l.UsageWithout("product", key, "")
	require.Equal(t, Usage{Total: 14, NonPreemptible: 12}, l.Usage("product")["org"]["nvidia.com/gpu"], "nothing released")
	l.Release(key)
	require.Equal(t, l.Usage("product"), without)
	require.Equal(t, Usage{Total: 6, NonPreemptible: 4}, without["org"]["nvidia.com/gpu"])
	require.Equal(t, l.Usage("product"), l.UsageWithout("product", "", ""))
}

// TestLimitHolds: a limit holds while the usage gives the decision's
// outcomes (busy, over the guarantee), and not once either flipped.
func TestLimitHolds(t *testing.T) {
	lim := Limit{Tenant: "product", Key: "nvidia.com/gpu", Ceiling: 16, Guaranteed: 8, Demand: 4,
		Seen: Usage{Total: 2, NonPreemptible: 2}}
	at := func(total, np int) map[string]map[string]Usage {
		return map[string]map[string]Usage{"product": {"nvidia.com/gpu": {Total: total, NonPreemptible: np}}}
	}
	require.True(t, lim.Holds(at(2, 2)))
	require.True(t, lim.Holds(at(12, 4)), "at the ceiling and the guarantee, not beyond")
	require.True(t, lim.Holds(nil), "no usage is none used")
	require.False(t, lim.Holds(at(13, 2)), "now busy")
	require.False(t, lim.Holds(at(6, 5)), "now over the guarantee")
	lim.Busy, lim.OverGuarantee = true, true
	require.True(t, lim.Holds(at(20, 10)))
	require.False(t, lim.Holds(at(20, 4)), "no longer over the guarantee")
}

// TestReserveIf: the commit reserves, replacing key's earlier reservation,
// only when the check holds for the usage without that reservation; when
// it does not, nothing changes.
func TestReserveIf(t *testing.T) {
	l := New(testConfig)
	l.Reserve("k", "product", map[string]int{"nvidia.com/gpu": 8}, false, time.Minute)
	l.Reserve("other", "product", map[string]int{"nvidia.com/gpu": 2}, false, time.Minute)
	var seen map[string]map[string]Usage
	require.False(t, l.ReserveIf("k", "product", "", map[string]int{"nvidia.com/gpu": 4}, false, 0, time.Minute,
		func(u map[string]map[string]Usage) bool { seen = u; return false }))
	require.Equal(t, Usage{Total: 2, NonPreemptible: 2}, seen["product"]["nvidia.com/gpu"], "checked without k's own reservation")
	require.Equal(t, Usage{Total: 10, NonPreemptible: 10}, l.Usage("product")["product"]["nvidia.com/gpu"], "nothing changed")
	require.True(t, l.ReserveIf("k", "product", "", map[string]int{"nvidia.com/gpu": 4}, true, 0, time.Minute,
		func(map[string]map[string]Usage) bool { return true }))
	require.Equal(t, Usage{Total: 6, NonPreemptible: 2}, l.Usage("product")["product"]["nvidia.com/gpu"], "k replaced")
}
