package replay

import (
	"context"
	"fmt"
	"sort"
)

// Scenario is a preemption case small enough to play on a real scheduler
// too: jobs that arrive in order and run past the end, on a supply. An
// e2e test creates the same jobs one by one on the real scheduler and
// compares what it runs and evicts after each arrival with ScenarioOutcome.At.
type Scenario struct {
	// Jobs arrive in this order; a job with no Submit arrives one second
	// after the one before it, and one with no Duration runs past the end.
	Jobs   []Job
	Supply Supply
}

// ScenarioOutcome is what the simulation did with a scenario.
type ScenarioOutcome struct {
	// Timeline is every start, eviction and end, in order.
	Timeline []JobEvent
	// Arrivals are the jobs' arrival times, in order.
	Arrivals []float64
}

// RunScenario simulates sc under o (Observe, Until and Events are the
// scenario's) until just after the last arrival.
func RunScenario(ctx context.Context, sc Scenario, o Options) (ScenarioOutcome, error) {
	jobs := make([]Job, len(sc.Jobs))
	var out ScenarioOutcome
	at := 0.0
	for i, j := range sc.Jobs {
		if j.Submit == 0 && i > 0 {
			j.Submit = at + 1
		}
		if j.Duration == 0 {
			j.Duration = 1e9
		}
		at = j.Submit
		jobs[i] = j
		out.Arrivals = append(out.Arrivals, j.Submit)
	}
	o.Events = nil
	o.Until = at + 0.5
	o.Observe = func(e JobEvent) { out.Timeline = append(out.Timeline, e) }
	if _, err := Run(ctx, jobs, sc.Supply, o); err != nil {
		return out, fmt.Errorf("unable to simulate the scenario: %w", err)
	}
	return out, nil
}

// At is what runs after the events up to time at, and the jobs evicted by
// then (a job evicted and started again is in both), each sorted.
func (o ScenarioOutcome) At(at float64) (running, evicted []string) {
	run, ev := map[string]bool{}, map[string]bool{}
	for _, e := range o.Timeline {
		if e.At > at {
			break
		}
		switch e.What {
		case EventStart:
			run[e.Job] = true
		case EventEvict:
			delete(run, e.Job)
			ev[e.Job] = true
		case EventEnd:
			delete(run, e.Job)
		}
	}
	return sortedSet(run), sortedSet(ev)
}

// Final is what runs and what was evicted after the last arrival.
func (o ScenarioOutcome) Final() (running, evicted []string) {
	if len(o.Arrivals) == 0 {
		return nil, nil
	}
	return o.At(o.Arrivals[len(o.Arrivals)-1])
}

func sortedSet(m map[string]bool) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
