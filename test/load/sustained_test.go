//go:build load

package load

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/test/envtest"
)

// Knobs of TestSustainedCreatesKeepTheLedgerFlat.
const (
	// SustainEnv sets how long the load runs (a Go duration); 5m by
	// default, the acceptance.
	SustainEnv = "MANDATE_SUSTAIN"
	// SustainRateEnv sets the creates per second offered; the harness
	// reports the rate it achieved.
	SustainRateEnv = "MANDATE_SUSTAIN_RATE"
)

// ledgerSize is the TenantLedgers' size at one moment: reservation lines
// and bytes of spec.reservations, summed over every tree.
type ledgerSize struct {
	at           time.Duration
	lines, bytes int
}

// TestSustainedCreatesKeepTheLedgerFlat: two replicas sharing their
// reservations (--shared-quota, as the chart runs them) take a steady
// stream of one-GPU build pods across the ten tenants for MANDATE_SUSTAIN
// (5 minutes), with a confirmation window of 5 minutes: the setting at
// which every TenantLedger write used to fail (etcd's request limit)
// because a reservation stayed until it expired. A reservation now leaves
// the shared ledger once a replica has seen its pod stored and
// ledger.SettleTime has passed, so the ledger holds what is not stored
// yet: its size stays under what the achieved rate admits in
// SettleTime plus the stored-check grace plus 10 s of informer lag,
// whatever the run's length and the window. No create is refused for the
// ledger, and no tenant runs more non-preemptible pods than its guarantee.
func TestSustainedCreatesKeepTheLedgerFlat(t *testing.T) {
	duration := 5 * time.Minute
	if v := os.Getenv(SustainEnv); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, SustainEnv)
		duration = d
	}
	rate := 120.0
	if v := os.Getenv(SustainRateEnv); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		require.NoError(t, err, SustainRateEnv)
		rate = r
	}
	replicas, _ := startReplicas(t, 2, "--shared-quota", "--confirmation-window", "5m")
	h := replicas[0]

	var (
		mu      sync.Mutex
		samples []ledgerSize
	)
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	began := time.Now()
	go func() {
		defer close(sampled)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			ledgers, err := envtest.TenantLedgers(ctx, h.env.Client)
			cancel()
			if err != nil {
				continue
			}
			s := ledgerSize{at: time.Since(began)}
			for i := range ledgers {
				text := envtest.Reservations(&ledgers[i])
				s.lines += strings.Count(text, "\n")
				s.bytes += len(text)
			}
			mu.Lock()
			samples = append(samples, s)
			mu.Unlock()
		}
	}()

	stop := make(chan struct{})
	load := h.steadyLoad("sustain", "build", rate, 32, stop)
	time.Sleep(duration)
	close(stop)
	results := load.wait()
	elapsed := time.Since(began)
	// The last reservations settle: the ledger is read once more after.
	time.Sleep(ledger.SettleTime + cluster.StoredGrace)
	close(stopSampling)
	<-sampled

	refused, failed := 0, 0
	var firstFailure error
	for _, r := range results {
		if r.err == nil {
			continue
		}
		failed++
		if firstFailure == nil {
			firstFailure = r.err
		}
		if msg := r.err.Error(); strings.Contains(msg, "too large") || strings.Contains(msg, "quota ledger") {
			refused++
		}
	}
	achieved := float64(len(results)-failed) / duration.Seconds()
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, samples, "the TenantLedgers were never read")
	peak := ledgerSize{}
	perMinute := map[int]int{}
	for _, s := range samples {
		if s.lines > peak.lines {
			peak = s
		}
		if m := int(s.at / time.Minute); s.lines > perMinute[m] {
			perMinute[m] = s.lines
		}
	}
	var minutes []string
	for m := 0; m <= int(elapsed/time.Minute); m++ {
		minutes = append(minutes, strconv.Itoa(perMinute[m]))
	}
	bound := int(math.Ceil(achieved * (ledger.SettleTime + cluster.StoredGrace + 10*time.Second).Seconds()))
	fmt.Printf("sustained: 2 replicas, --confirmation-window 5m: %d creates in %s offered at %.0f/s, %.1f/s stored, %d failed (%d refused for the ledger)\n",
		len(results), duration, rate, achieved, failed, refused)
	fmt.Printf("sustained: TenantLedger peak %d lines (%d KB) at %s; peak lines per minute %s; bound %d (the achieved rate over settle time, grace and 10 s)\n",
		peak.lines, peak.bytes/1024, peak.at.Round(time.Second), strings.Join(minutes, ", "), bound)
	if firstFailure != nil {
		fmt.Printf("sustained: first failure: %v\n", firstFailure)
	}
	require.Zero(t, refused, "creates refused for the shared ledger (first failure: %v)", firstFailure)
	require.LessOrEqual(t, peak.lines, bound, "the ledger holds what is not stored yet, not every admission of the window")

	perTenant, unmarked := h.podsOf(t, "sustain")
	require.Empty(t, unmarked, "every stored pod was decided by Mandate")
	for i := range tenants {
		ns := fmt.Sprintf("team-%d", i)
		require.LessOrEqual(t, perTenant[ns][0], guaranteed, "%s: non-preemptible pods", ns)
	}
}
