package review

import (
	"context"
	"fmt"
	"runtime"

	"github.com/mandate-dev/mandate/evaluator"
)

// evaluations bounds the policy evaluations of admissions running at once
// to the CPUs Go runs on (at least two). Decisions are made outside the
// tenant tree's lock, so without a bound every admission in flight would
// evaluate at once, each slowed by all the others, and a burst would run
// them past their evaluation deadline (which bounds a runaway policy, not
// queueing): CPU-bound work gains nothing from more evaluations than
// cores. The wait counts against the request's context, not the
// evaluation's deadline.
var evaluations = make(chan struct{}, max(runtime.GOMAXPROCS(0), 2))

// decideBounded is decider.Decide in one of the evaluation slots.
func decideBounded(ctx context.Context, decider Decider, in evaluator.Input) (evaluator.Decision, error) {
	select {
	case evaluations <- struct{}{}:
	case <-ctx.Done():
		return evaluator.Decision{}, fmt.Errorf("unable to start the evaluation: %w", ctx.Err())
	}
	defer func() { <-evaluations }()
	return decider.Decide(ctx, in)
}
