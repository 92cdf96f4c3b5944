package review_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/test/reviewtest"
)

// TestReviewsOfOneTreeDecideAtOnce: admissions of one tenant tree are
// decided at the same time (two are inside the policy evaluation
// together), and still exactly the 16 guaranteed GPUs product has left in
// the example cluster go to non-preemptible build pods; the other 44 are
// turned preemptible.
func TestReviewsOfOneTreeDecideAtOnce(t *testing.T) {
	r := exampleReviewer(t)
	r.Decider = &reviewtest.MeetingDecider{Next: r.Decider}
	var nonPreemptible, preemptible atomic.Int32
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rv, err := r.Review(context.Background(), buildPod(fmt.Sprintf("p-%d", i)), evaluator.Request{Operation: "CREATE"})
			if err != nil || !rv.Decision.Allowed {
				t.Errorf("pod %d: allowed=%v err=%v", i, rv.Decision.Allowed, err)
				return
			}
			if rv.Decision.Directives.Preemptible {
				preemptible.Add(1)
			} else {
				nonPreemptible.Add(1)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 16, nonPreemptible.Load())
	require.EqualValues(t, 44, preemptible.Load())
	u := r.State.Usage("product")["product"]["nvidia.com/gpu"]
	require.Equal(t, 60+112, u.Total)
	require.Equal(t, 128, u.NonPreemptible)
}
