package cluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/ledger"
)

// waitDeadline bounds how long a broken run hangs waiting for decisions
// to meet; it is not what the tests assert.
const waitDeadline = 2 * time.Minute

const gpu = "nvidia.com/gpu"

// quotaDecision decides a 1-GPU non-preemptible workload of tenant as
// mandate.quota does for a guarantee of g: beyond it, the workload is
// turned preemptible. With known it says which limit it relied on;
// without, it is a custom policy that says nothing.
func quotaDecision(v View, tenant string, g int, known bool) Reservation {
	u := v.Usage[tenant][gpu]
	over := u.NonPreemptible+1 > g
	r := Reservation{GPUs: map[string]int{gpu: 1}, Preemptible: over, ReliedKnown: known}
	if known {
		r.Relied = []ledger.Limit{{Tenant: tenant, Key: gpu, Ceiling: 1000, Guaranteed: g, Demand: 1, Seen: u,
			Busy: u.Total+1 > 1000, OverGuarantee: over}}
	}
	return r
}

func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitDeadline):
		t.Fatalf("gave up after %v waiting for %s", waitDeadline, what)
	}
}

// TestDecisionsOfOneTreeRunAtOnce: two admissions of tenants of the same
// tree (product and research-vision, both under helix) are inside their
// decisions at the same time: no lock is held while deciding. Both are
// reserved afterwards.
func TestDecisionsOfOneTreeRunAtOnce(t *testing.T) {
	s, err := New(defaultModel(t))
	require.NoError(t, err)
	entered := make(chan struct{})
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i, tenant := range []string{"product", "research-vision"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Decide(context.Background(), tenant, fmt.Sprintf("batch/Job/ns/j-%d", i), func(v View) (Reservation, error) {
				entered <- struct{}{}
				<-release
				return quotaDecision(v, tenant, 100, true), nil
			})
			assert.NoError(t, err)
		}()
	}
	await(t, entered, "the first decision")
	await(t, entered, "the second decision while the first is still deciding")
	close(release)
	wg.Wait()
	assert.Equal(t, 2, s.Usage("product")["helix"][gpu].Total)
}

// TestExactlyTheGuaranteeStaysNonPreemptible: n admissions decide at once
// (all inside their first decision together), each seeing the whole
// guarantee free. Their commits re-check the guarantee: exactly g stay
// non-preemptible, the others are decided again and turned preemptible.
// With the limit named (relied) exactly n-g are decided again; a policy
// that names none is re-decided on any change of the usage it read, and
// still exactly g stay.
func TestExactlyTheGuaranteeStaysNonPreemptible(t *testing.T) {
	const n, g = 40, 8
	for _, known := range []bool{true, false} {
		t.Run(fmt.Sprintf("relied=%v", known), func(t *testing.T) {
			s, err := New(defaultModel(t))
			require.NoError(t, err)
			outside := testutil.ToFloat64(redecisions.WithLabelValues(redecideOutside))
			locked := testutil.ToFloat64(redecisions.WithLabelValues(redecideLocked))
			var inside atomic.Int32
			all := make(chan struct{})
			var nonPreemptible, decisions atomic.Int32
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					first := true
					var last Reservation
					err := s.Decide(context.Background(), "product", fmt.Sprintf("batch/Job/ns/j-%d", i), func(v View) (Reservation, error) {
						decisions.Add(1)
						if first {
							first = false
							if inside.Add(1) == n {
								close(all)
							}
							<-all
						}
						last = quotaDecision(v, "product", g, known)
						return last, nil
					})
					assert.NoError(t, err)
					if !last.Preemptible {
						nonPreemptible.Add(1)
					}
				}()
			}
			await(t, all, "every first decision")
			wg.Wait()
			assert.EqualValues(t, g, nonPreemptible.Load())
			u := s.Usage("product")["product"][gpu]
			assert.Equal(t, ledger.Usage{Total: n, NonPreemptible: g}, u)
			redecided := testutil.ToFloat64(redecisions.WithLabelValues(redecideOutside)) - outside +
				testutil.ToFloat64(redecisions.WithLabelValues(redecideLocked)) - locked
			assert.EqualValues(t, int(decisions.Load())-n, redecided, "every decision beyond the first of each admission is counted")
			if known {
				assert.EqualValues(t, n-g, redecided, "only the admissions whose guarantee flipped decide again")
			}
		})
	}
}

// TestAFlipEveryTimeDecidesUnderTheLock: a decision whose relied limit
// never holds at commit is decided again outside the lock once, then under
// it, where it is reserved whatever it relied on: every admission ends.
func TestAFlipEveryTimeDecidesUnderTheLock(t *testing.T) {
	s, err := New(defaultModel(t))
	require.NoError(t, err)
	locked := testutil.ToFloat64(redecisions.WithLabelValues(redecideLocked))
	calls := 0
	err = s.Decide(context.Background(), "product", "batch/Job/ns/stubborn", func(v View) (Reservation, error) {
		calls++
		r := quotaDecision(v, "product", 8, true)
		r.Relied[0].Busy = true // claims a busy ceiling the usage never shows
		return r, nil
	})
	require.NoError(t, err)
	assert.Equal(t, optimisticAttempts+1, calls)
	assert.Equal(t, 1.0, testutil.ToFloat64(redecisions.WithLabelValues(redecideLocked))-locked)
	assert.Equal(t, 1, s.Usage("product")["product"][gpu].Total)
}

// TestDecidedAgainWithoutItsOwnReservation: a workload decided again (the
// API server reinvoking the webhook) sees the usage without its earlier
// reservation, which its new decision replaces.
func TestDecidedAgainWithoutItsOwnReservation(t *testing.T) {
	s, err := New(defaultModel(t))
	require.NoError(t, err)
	key := "batch/Job/ns/again"
	for range 2 {
		err := s.Decide(context.Background(), "product", key, func(v View) (Reservation, error) {
			assert.Equal(t, 0, v.Usage["product"][gpu].Total, "its own reservation does not count")
			r := quotaDecision(v, "product", 8, true)
			r.GPUs[gpu] = 4
			return r, nil
		})
		require.NoError(t, err)
	}
	assert.Equal(t, ledger.Usage{Total: 4, NonPreemptible: 4}, s.Usage("product")["product"][gpu])
}

// TestDeniedChangeKeepsTheCreatesReservation: a change of a stored
// workload that is denied (reserves nothing) leaves the reservation its
// create made, which counts until the workload's hold is seen.
func TestDeniedChangeKeepsTheCreatesReservation(t *testing.T) {
	s, err := New(defaultModel(t))
	require.NoError(t, err)
	key := "batch/Job/ns/grow"
	require.NoError(t, s.Decide(context.Background(), "product", key, func(v View) (Reservation, error) {
		r := quotaDecision(v, "product", 8, true)
		r.GPUs[gpu] = 2
		return r, nil
	}))
	require.NoError(t, s.DecideExcluding(context.Background(), "product", key, "uid-1", func(View) (Reservation, error) {
		return Reservation{Generation: 2}, nil // denied
	}))
	assert.Equal(t, ledger.Usage{Total: 2, NonPreemptible: 2}, s.Usage("product")["product"][gpu], "the create's reservation still counts")
	require.NoError(t, s.Decide(context.Background(), "product", key, func(View) (Reservation, error) {
		return Reservation{}, nil // a create decided again and denied: its reservation goes
	}))
	assert.Zero(t, s.Usage("product")["product"][gpu].Total)
}
