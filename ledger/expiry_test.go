package ledger

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Reservations, settling entries and claims expire at their deadline, in
// deadline order, and a deadline that was moved (a reservation made
// again, a claim renewed) is kept, not the first one.
func TestExpiryFollowsDeadlines(t *testing.T) {
	l := New(testConfig)
	now := time.Now()
	l.now = func() time.Time { return now }
	l.UpsertNamespace(ns("p", "product"))
	gpus := map[string]int{"nvidia.com/gpu": 1}
	l.Reserve("short", "product", gpus, false, time.Minute)
	l.Reserve("long", "product", gpus, false, 3*time.Minute)
	l.Reserve("again", "product", gpus, false, time.Minute)
	ok, _ := l.ClaimGangPod("owner", "product", "pod-0", 4, time.Minute)
	require.True(t, ok)

	now = now.Add(30 * time.Second)
	l.Reserve("again", "product", gpus, false, time.Minute) // now due 30 s after "short"
	ok, _ = l.ClaimGangPod("owner", "product", "pod-0", 4, time.Minute)
	require.True(t, ok)

	now = now.Add(31 * time.Second)
	require.Equal(t, 2, l.Usage("product")["org"]["nvidia.com/gpu"].Total, "short expired")
	require.Equal(t, 2, l.Reservations())
	require.Len(t, l.claims["owner"], 1, "the renewed claim stays")

	now = now.Add(30 * time.Second)
	require.Equal(t, 1, l.Usage("product")["org"]["nvidia.com/gpu"].Total)
	require.Equal(t, 1, l.Reservations(), "the reservation made again expired at its new deadline")
	require.Empty(t, l.claims, "the renewed claim expired at its new deadline")

	now = now.Add(2 * time.Minute)
	require.Zero(t, l.Usage("product")["org"]["nvidia.com/gpu"].Total)
	require.Zero(t, l.Reservations())
	require.Empty(t, l.expiries, "every deadline was taken")
}

// A decision's ledger cost (UsageWithout, which expires what is due first)
// does not grow with the live reservations: compare ns/op across the sizes
// (`go test ./ledger/ -run '^$' -bench LiveReservations`).
func BenchmarkUsageWithLiveReservations(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			l := New(testConfig)
			l.UpsertNamespace(ns("p", "product"))
			for i := range n {
				l.Reserve(fmt.Sprintf("r%d", i), "product", map[string]int{"nvidia.com/gpu": 1}, i%2 == 0, time.Hour)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_ = l.UsageWithout("product", "r0", "")
			}
		})
	}
}
