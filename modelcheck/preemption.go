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
	checkBands(d, r)
}

// checkBands: the schedulers rank victims by value, so the promise that
// guaranteed work is never evicted for anything but its own tier's rights
// holds only when the values fall in three bands, lowest first: the
// preemptible tiers, the borrowed classes (non-preemptible work beyond a
// guarantee, model.BorrowedValues), the non-preemptible tiers. A model
// whose bands overlap would let a scheduler evict guaranteed work for
// preemptible or borrowed work.
func checkBands(d *model.Model, r *reporter) {
	lowGuaranteed, highPreemptible := 0, 0
	var anyGuaranteed, anyPreemptible bool
	for _, name := range sortedKeys(d.Priorities) {
		t := d.Priorities[name]
		if t.Preemptible {
			if t.BorrowedValue != nil {
				r.add(path("priorities", name, "borrowedValue"), "%s is preemptible, so it has no borrowed class: remove borrowedValue", name)
			}
			if !anyPreemptible || t.Value > highPreemptible {
				highPreemptible = t.Value
			}
			anyPreemptible = true
			continue
		}
		if !anyGuaranteed || t.Value < lowGuaranteed {
			lowGuaranteed = t.Value
		}
		anyGuaranteed = true
	}
	if !anyGuaranteed {
		return
	}
	for _, name := range sortedKeys(d.Priorities) {
		if t := d.Priorities[name]; t.Preemptible && t.Value >= lowGuaranteed {
			r.add(path("priorities", name, "value"), "preemptible tier %s (%d) is not below every non-preemptible tier (the lowest is %d): schedulers that evict by value would evict guaranteed work for it", name, t.Value, lowGuaranteed)
		}
	}
	borrowed := d.BorrowedValues()
	for _, name := range sortedKeys(d.Priorities) {
		v, ok := borrowed[model.BorrowedClass(name)]
		if !ok {
			continue
		}
		if _, taken := d.Priorities[model.BorrowedClass(name)]; taken {
			r.add(path("priorities", model.BorrowedClass(name)), "tier %s has the name of tier %s's borrowed class, which sync renders as a PriorityClass of its own: rename the tier",
				model.BorrowedClass(name), name)
		}
		at := path("priorities", name, "value")
		if d.Priorities[name].BorrowedValue != nil {
			at = path("priorities", name, "borrowedValue")
		}
		if v >= lowGuaranteed {
			r.add(at, "borrowed class %s (%d) is not below every non-preemptible tier (the lowest is %d): borrowed work would not be evicted before guaranteed work", model.BorrowedClass(name), v, lowGuaranteed)
		}
		if anyPreemptible && v <= highPreemptible {
			r.add(at, "borrowed class %s (%d) is not above every preemptible tier (the highest is %d): leave room between the preemptible and the non-preemptible tiers, or set priorities.%s.borrowedValue", model.BorrowedClass(name), v, highPreemptible, name)
		}
	}
}
