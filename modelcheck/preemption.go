package modelcheck

import "github.com/mandate-dev/mandate/model"

// checkPreemption: a preemption rule lets a tier preempt only tiers below
// it (a lower value) that are preemptible; anything else contradicts the
// tiers' values or their preemptible flag, and the schedulers, which
// preempt by value, would not do it (or would do what preemptible forbids).
func checkPreemption(d *model.Model, r *reporter) {
	for _, c := range sortedKeys(d.Preemption.MayPreempt) {
		preemptor, ok := d.Priorities[c]
		if !ok {
			continue // checkPriorityClasses reports it
		}
		for i, v := range d.Preemption.MayPreempt[c] {
			victim, ok := d.Priorities[v]
			if !ok {
				continue
			}
			at := path("preemption", "mayPreempt", c, i)
			if victim.Value >= preemptor.Value {
				r.add(at, "%s (%d) may preempt %s (%d), a tier as high or higher: a tier may preempt only tiers of a lower value", c, preemptor.Value, v, victim.Value)
			}
			if !victim.Preemptible {
				r.add(at, "%s may preempt %s, but %s is not preemptible (%s is false)", c, v, v, path("priorities", v, "preemptible"))
			}
		}
	}
}
