package modelcheck

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mandate-dev/mandate/model"
)

// checkPriorityClasses: every priority class the model names (tenants'
// lists, workload-class defaults, preemption rules) is a tier of
// priorities, and a tenant's classes are a subset of its parent's, with
// lists inherited as mandate.lib inherits them (a tenant without a list
// has its nearest ancestor's).
func checkPriorityClasses(d *model.Model, r *reporter) {
	known := classList(d)
	unknown := func(at, c string) {
		if _, ok := d.Priorities[c]; !ok {
			r.add(at, "priority class %q is not a tier of the model (priorities: %s)", c, known)
		}
	}
	for _, name := range tenantNames(d) {
		t := d.Tenants[name]
		if t.PriorityClasses == nil {
			continue
		}
		for i, c := range t.PriorityClasses {
			unknown(path("tenants", name, "priorityClasses", i), c)
		}
		if _, ok := d.Tenants[t.Parent]; !ok || !rooted(d, name) {
			continue
		}
		allowed, from, ok := d.AllowedClasses(t.Parent)
		for i, c := range t.PriorityClasses {
			if ok && slices.Contains(allowed, c) {
				continue
			}
			r.add(path("tenants", name, "priorityClasses", i), "tenant %s may use %s, but its parent %s may not (%s): a tenant's classes must be a subset of its parent's",
				name, c, t.Parent, describeAllowed(t.Parent, allowed, from, ok))
		}
	}
	for _, wc := range sortedKeys(d.ClassDefaults) {
		unknown(path("classDefaults", wc), d.ClassDefaults[wc])
	}
	for _, c := range sortedKeys(d.Preemption.MayPreempt) {
		unknown(path("preemption", "mayPreempt", c), c)
		for i, v := range d.Preemption.MayPreempt[c] {
			unknown(path("preemption", "mayPreempt", c, i), v)
		}
	}
}

// describeAllowed says which classes tenant may use and where that list
// comes from.
func describeAllowed(tenant string, allowed []string, from string, ok bool) string {
	switch {
	case !ok:
		return fmt.Sprintf("neither %s nor any tenant above it lists priorityClasses, so it may use none", tenant)
	case from != tenant:
		return fmt.Sprintf("%s inherits %s's: %s", tenant, from, strings.Join(allowed, ", "))
	default:
		return fmt.Sprintf("%s's: %s", tenant, strings.Join(allowed, ", "))
	}
}

// classList names the tiers, sorted, for messages.
func classList(d *model.Model) string {
	return strings.Join(sortedKeys(d.Priorities), ", ")
}
