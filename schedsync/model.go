package schedsync

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/scheduler/facts"
)

// Spec is the authority model (model.Model) as the schedulers'
// configuration is rendered from it.
type Spec struct {
	model.Model
}

// Tenant is one tenant as the schedulers see it.
type Tenant = model.Tenant

// Tier is one priority class of the model.
type Tier = model.Tier

// FromData reads data.mandate.model out of a policy's data.
func FromData(data map[string]any) (Spec, error) {
	var s Spec
	mandate, _ := data["mandate"].(map[string]any)
	raw, ok := mandate["model"]
	if !ok {
		return s, fmt.Errorf("policy data has no mandate.model: the authority model is missing")
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return s, fmt.Errorf("unable to read mandate.model: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("mandate.model is malformed: %w", err)
	}
	for _, name := range s.TenantNames() {
		t := s.Tenants[name]
		if t.Parent != "" {
			if _, ok := s.Tenants[t.Parent]; !ok {
				return s, fmt.Errorf("mandate.model.tenants.%s.parent names unknown tenant %q", name, t.Parent)
			}
		}
		if _, err := s.Quotas(name); err != nil {
			return s, err
		}
		if _, err := s.depth(name); err != nil {
			return s, err
		}
	}
	return s, nil
}

// TenantNames lists the tenants parents first (by depth, then name), the
// order queues must be created in.
func (s Spec) TenantNames() []string {
	names := make([]string, 0, len(s.Tenants))
	for n := range s.Tenants {
		names = append(names, n)
	}
	depth := make(map[string]int, len(names))
	for _, n := range names {
		depth[n], _ = s.depth(n)
	}
	sort.Slice(names, func(i, j int) bool {
		if depth[names[i]] != depth[names[j]] {
			return depth[names[i]] < depth[names[j]]
		}
		return names[i] < names[j]
	})
	return names
}

// depth counts a tenant's ancestors; a cycle is an error.
func (s Spec) depth(name string) (int, error) {
	d := 0
	for t := s.Tenants[name].Parent; t != ""; t = s.Tenants[t].Parent {
		d++
		if d > len(s.Tenants) {
			return 0, fmt.Errorf("mandate.model.tenants.%s: the parent chain is a cycle", name)
		}
	}
	return d, nil
}

// QueueName is the queue the directives name for a tenant: its queue, or
// its own name.
func (s Spec) QueueName(tenant string) string {
	if q := s.Tenants[tenant].Queue; q != "" {
		return q
	}
	return tenant
}

// SchedulerOf is the scheduler a tenant's work goes to: the first one set
// on its chain of parents, the default scheduler when none is.
func (s Spec) SchedulerOf(tenant string) string {
	for t := tenant; t != ""; t = s.Tenants[t].Parent {
		if sch := s.Tenants[t].Scheduler; sch != "" {
			return sch
		}
	}
	return facts.Default.Name
}

// Children lists a tenant's direct children, sorted.
func (s Spec) Children(tenant string) []string {
	var out []string
	for n, t := range s.Tenants {
		if t.Parent == tenant {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// TierNames lists the priority tiers, sorted.
func (s Spec) TierNames() []string {
	out := make([]string, 0, len(s.Priorities))
	for n := range s.Priorities {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// overGuaranteeReclaimable reports whether work above a guarantee may be
// taken back by other tenants.
func (s Spec) overGuaranteeReclaimable() bool {
	return s.QuotaPolicy.OverGuarantee == "" || s.QuotaPolicy.OverGuarantee == "preemptible"
}

// anyTierPreempts reports whether some tier may preempt another.
func (s Spec) anyTierPreempts() bool {
	for _, victims := range s.Preemption.MayPreempt {
		if len(victims) > 0 {
			return true
		}
	}
	return false
}

// maxTierValue is the highest value of the tiers a tenant may use (its
// nearest ancestor's list when it has none, every tier when none has one);
// 0 without tiers.
func (s Spec) maxTierValue(tenant string) int {
	var classes []string
	for t := tenant; t != "" && classes == nil; t = s.Tenants[t].Parent {
		classes = s.Tenants[t].PriorityClasses
	}
	if classes == nil {
		classes = s.TierNames()
	}
	best := 0
	for _, c := range classes {
		if v := s.Priorities[c].Value; v > best {
			best = v
		}
	}
	return best
}
