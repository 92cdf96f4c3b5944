package replay

import (
	"slices"
	"sort"

	"github.com/mandate-dev/mandate/scheduler/facts"
)

// The victim choice, as every scheduler Mandate renders for evicts once
// Mandate has configured it (docs/simulate.md, "Preemption"): only work
// its directives made preemptible — a preemptible tier, or a guaranteed
// tier's work beyond the tenant's guarantee (borrowed) — is ever a victim,
// never work within a guarantee whatever the preemptor's priority; the
// lowest value first (the preemptible tiers, then the borrowed band, below
// every guaranteed tier); a gang goes whole, or on a scheduler that never
// breaks a gang (facts.Scheduler.NeverEvictsGangs: Volcano) not at all.

// evictable says whether v's scheduler would ever make it a victim.
func (s *sim) evictable(v *job) bool {
	if !v.preempt {
		return false
	}
	if v.minPods > 1 && v.running() <= v.minPods {
		if f, ok := facts.Lookup(v.scheduler); ok && f.NeverEvictsGangs {
			return false
		}
	}
	return true
}

// mayPreempt says whether j may take victim's GPUs on a node: j is not
// preemptible itself, the victim is evictable, of a lower value, and in a
// tier j's tier may preempt (preemption.mayPreempt) or borrowed (its tier
// is not preemptible: the directives made it preemptible beyond its
// tenant's guarantee, quotaPolicy.overGuarantee).
func (s *sim) mayPreempt(j, victim *job) bool {
	if j.preempt || !s.evictable(victim) || victim.value >= j.value {
		return false
	}
	if slices.Contains(s.m.Preemption.MayPreempt[j.tier], victim.tier) {
		return true
	}
	return !s.m.Priorities[victim.tier].Preemptible
}

// mayReclaim says whether j, within its tenant's guarantee, may take back
// victim's GPUs from another tenant under one of j's ancestors: whatever
// their priorities, as Kueue's reclaimWithinCohort, Volcano's reclaim and
// KAI's reclaim do; only evictable (borrowed or preemptible) work.
func (s *sim) mayReclaim(j, victim *job) bool {
	return !j.preempt && victim.tenant != j.tenant && s.evictable(victim) && sharesAncestor(j.chain, victim.chain)
}

// victims are the running jobs that may be evicted, in the order they are:
// the lowest value first, then the latest started, then the earlier in
// the trace.
func (s *sim) victims(may func(*job) bool) []*job {
	var out []*job
	for v := range s.running {
		if may(v) {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if x.value != y.value {
			return x.value < y.value
		}
		if x.started != y.started {
			return x.started > y.started
		}
		return x.seq < y.seq
	})
	return out
}

// sharesAncestor says whether two tenant chains (a tenant and its
// ancestors) meet above the first's own tenant.
func sharesAncestor(a, b []string) bool {
	if len(a) < 2 {
		return false
	}
	for _, t := range a[1:] {
		if slices.Contains(b, t) {
			return true
		}
	}
	return false
}
