package model

import (
	"sort"
	"strings"
)

// borrowedSuffix ends the name of a tier's borrowed class. Rego names the
// class the same way (mandate.lib.borrowed_class); TestBorrowedClassAgrees
// keeps the two in step.
const borrowedSuffix = "-borrowed"

// BorrowedClass is the priority class of a non-preemptible tier's work
// beyond a guarantee: admitted preemptible (quotaPolicy.overGuarantee
// preemptible), it runs at a value below every guaranteed tier, so every
// scheduler that ranks victims by value (kube-scheduler, Kueue) evicts it
// before any guaranteed work, and never for it (its PriorityClass may
// preempt nothing).
func BorrowedClass(tier string) string {
	return tier + borrowedSuffix
}

// TierOf is the tier a priority class belongs to: the class itself for a
// tier, the tier of a borrowed class (borrowed true), and ok false for a
// class the model does not know.
func (m Model) TierOf(class string) (tier string, borrowed, ok bool) {
	if _, known := m.Priorities[class]; known {
		return class, false, true
	}
	if _, isBorrowed := m.BorrowedValues()[class]; isBorrowed {
		return strings.TrimSuffix(class, borrowedSuffix), true, true
	}
	return "", false, false
}

// ClassValue is the value of a priority class, a tier's or a borrowed
// class's; ok false for one the model does not know.
func (m Model) ClassValue(class string) (value int, ok bool) {
	if t, known := m.Priorities[class]; known {
		return t.Value, true
	}
	v, ok := m.BorrowedValues()[class]
	return v, ok
}

// BorrowedValues maps each borrowed class the model has to its value.
// Only non-preemptible tiers have one, and only when work beyond a
// guarantee is admitted preemptible (OverGuaranteeReclaimable). A tier's
// borrowedValue wins; the others fill the band just below the lowest
// non-preemptible value G, in the tiers' order: with n such tiers,
// ascending t1..tn, ti's borrowed class is worth G-n-1+i (the example
// model: build 100, inference 125 give build-borrowed 98 and
// inference-borrowed 99). The model checker refuses values that leave
// the band between the preemptible and the non-preemptible tiers.
func (m Model) BorrowedValues() map[string]int {
	if !m.OverGuaranteeReclaimable() {
		return nil
	}
	guaranteed := m.guaranteedTiers()
	if len(guaranteed) == 0 {
		return nil
	}
	low := m.Priorities[guaranteed[0]].Value
	out := make(map[string]int, len(guaranteed))
	for i, name := range guaranteed {
		v := low - len(guaranteed) + i
		if set := m.Priorities[name].BorrowedValue; set != nil {
			v = *set
		}
		out[BorrowedClass(name)] = v
	}
	return out
}

// guaranteedTiers lists the non-preemptible tiers by value, ascending
// (by name among equal values).
func (m Model) guaranteedTiers() []string {
	var out []string
	for name, t := range m.Priorities {
		if !t.Preemptible {
			out = append(out, name)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := m.Priorities[out[i]], m.Priorities[out[j]]
		if a.Value != b.Value {
			return a.Value < b.Value
		}
		return out[i] < out[j]
	})
	return out
}

// Class is a priority class the model defines: a tier's own, or a
// non-preemptible tier's borrowed class.
type Class struct {
	Name string
	// Tier is the tier the class belongs to (Name itself for a tier).
	Tier     string
	Value    int
	Borrowed bool
	// Preempts says whether work of the class may preempt at all: a tier
	// that may preempt others (preemption.mayPreempt) or a non-preemptible
	// tier, whose guaranteed work takes back what borrowed work holds; a
	// borrowed class never preempts.
	Preempts    bool
	Description string
}

// Classes lists every priority class of the model, the tiers' and the
// borrowed ones, by name: what the schedulers are given (PriorityClasses,
// Kueue's WorkloadPriorityClasses) and what victims are ranked by.
func (m Model) Classes() []Class {
	borrowed := m.BorrowedValues()
	out := make([]Class, 0, len(m.Priorities)+len(borrowed))
	for _, name := range m.TierNames() {
		t := m.Priorities[name]
		out = append(out, Class{Name: name, Tier: name, Value: t.Value, Description: t.Description,
			Preempts: len(m.Preemption.MayPreempt[name]) > 0 || (!t.Preemptible && len(borrowed) > 0)})
		if v, ok := borrowed[BorrowedClass(name)]; ok {
			out = append(out, Class{Name: BorrowedClass(name), Tier: name, Value: v, Borrowed: true,
				Description: "Work of tier " + name + " beyond its tenant's guarantee: preemptible, evicted before any guaranteed work, preempts nothing."})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
