package model

import (
	"sort"

	"github.com/mandate-dev/mandate/scheduler/facts"
)

// Parents maps each tenant to its parent ("" for a root).
func (m Model) Parents() map[string]string {
	out := make(map[string]string, len(m.Tenants))
	for name, t := range m.Tenants {
		out[name] = t.Parent
	}
	return out
}

// PreemptibleClasses lists which priority classes are preemptible: the
// preemptible tiers and every borrowed class (BorrowedValues); the
// non-preemptible tiers map to false.
func (m Model) PreemptibleClasses() map[string]bool {
	borrowed := m.BorrowedValues()
	out := make(map[string]bool, len(m.Priorities)+len(borrowed))
	for name, t := range m.Priorities {
		out[name] = t.Preemptible
	}
	for name := range borrowed {
		out[name] = true
	}
	return out
}

// Chain is the tenant and its ancestors, nearest first, as far as they are
// tenants of the model, at most MaxDepth+1 long (enough to tell a chain
// too deep), and stopping before a tenant repeats (a cycle). In a sound
// model it is the whole chain up to the root.
func (m Model) Chain(name string) []string {
	var out []string
	seen := map[string]bool{}
	for t := name; t != "" && !seen[t] && len(out) <= MaxDepth; t = m.Tenants[t].Parent {
		if _, ok := m.Tenants[t]; !ok {
			break
		}
		seen[t] = true
		out = append(out, t)
	}
	return out
}

// Ancestry is the tenant and all its ancestors, nearest first, however
// deep; rooted is false when the walk meets a parent that is no tenant or
// a cycle (the model checker reports both).
func (m Model) Ancestry(name string) (chain []string, rooted bool) {
	seen := map[string]bool{}
	for t := name; t != ""; t = m.Tenants[t].Parent {
		if _, ok := m.Tenants[t]; !ok || seen[t] {
			return chain, false
		}
		seen[t] = true
		chain = append(chain, t)
	}
	return chain, true
}

// Depth counts a tenant's ancestors (0 for a root), at most MaxDepth.
func (m Model) Depth(name string) int {
	if c := m.Chain(name); len(c) > 0 {
		return len(c) - 1
	}
	return 0
}

// TenantNames lists the tenants parents first (by depth, then name): the
// order a hierarchy is created in, e.g. the schedulers' queues.
func (m Model) TenantNames() []string {
	names := make([]string, 0, len(m.Tenants))
	depth := make(map[string]int, len(m.Tenants))
	for n := range m.Tenants {
		names = append(names, n)
		depth[n] = m.Depth(n)
	}
	sort.Slice(names, func(i, j int) bool {
		if depth[names[i]] != depth[names[j]] {
			return depth[names[i]] < depth[names[j]]
		}
		return names[i] < names[j]
	})
	return names
}

// Children lists a tenant's direct children, sorted; Children("") lists
// the roots.
func (m Model) Children(tenant string) []string {
	var out []string
	for n, t := range m.Tenants {
		if t.Parent == tenant {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// QueueName is the queue the directives name for a tenant: its queue, or
// its own name.
func (m Model) QueueName(tenant string) string {
	if q := m.Tenants[tenant].Queue; q != "" {
		return q
	}
	return tenant
}

// DefaultScheduler runs the work of a tenant whose chain names no
// scheduler: the Kubernetes default scheduler (its name is the registry's).
var DefaultScheduler = facts.Default.Name

// SchedulerOf is the scheduler a tenant's work goes to: the nearest one
// set on its chain, DefaultScheduler when none is.
func (m Model) SchedulerOf(tenant string) string {
	for _, t := range m.Chain(tenant) {
		if s := m.Tenants[t].Scheduler; s != "" {
			return s
		}
	}
	return DefaultScheduler
}

// AllowedClasses are the priority classes a tenant may use, as mandate.lib
// computes them: its own list, else the nearest ancestor's (from names the
// tenant whose list it is); ok false when no tenant of its chain lists any
// (it may use none).
func (m Model) AllowedClasses(tenant string) (classes []string, from string, ok bool) {
	for _, t := range m.Chain(tenant) {
		if pc := m.Tenants[t].PriorityClasses; pc != nil {
			return pc, t, true
		}
	}
	return nil, "", false
}

// TierNames lists the priority tiers, sorted.
func (m Model) TierNames() []string {
	out := make([]string, 0, len(m.Priorities))
	for n := range m.Priorities {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// MaxTierValue is the highest value of the tiers a tenant may use (every
// tier when no tenant of its chain lists any); 0 without tiers.
func (m Model) MaxTierValue(tenant string) int {
	classes, _, ok := m.AllowedClasses(tenant)
	if !ok {
		classes = m.TierNames()
	}
	best := 0
	for _, c := range classes {
		if v := m.Priorities[c].Value; v > best {
			best = v
		}
	}
	return best
}

// OverGuaranteeReclaimable reports whether work above a guarantee may be
// taken back by other tenants (quotaPolicy.overGuarantee "preemptible",
// the default).
func (m Model) OverGuaranteeReclaimable() bool {
	return m.QuotaPolicy.OverGuarantee == "" || m.QuotaPolicy.OverGuarantee == "preemptible"
}

// AnyTierPreempts reports whether some tier may preempt another.
func (m Model) AnyTierPreempts() bool {
	for _, victims := range m.Preemption.MayPreempt {
		if len(victims) > 0 {
			return true
		}
	}
	return false
}
