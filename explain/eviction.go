package explain

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/topology"
)

// Eviction says whether the workload may be evicted for other work, and the
// rule that decides it: the promise every scheduler Mandate renders for
// keeps (README, "Preemption"). Work within its tenant's guarantee is never
// evicted for another tenant's work; borrowed work (a guaranteed tier's
// work beyond the guarantee) and preemptible tiers are, the lowest value
// first; a gang goes whole, or on a scheduler that never breaks a gang not
// at all. It is data — a code, the dimension and the facts — rendered to
// Message.
type Eviction struct {
	Evictable bool `json:"evictable"`
	// Code is the rule: NOT_EVICTABLE_GUARANTEED, EVICTABLE_BORROWED,
	// EVICTABLE_PREEMPTIBLE_TIER or NOT_EVICTABLE_GANG.
	Code string `json:"code"`
	// Dimension is the authority dimension of the rule: quota (within or
	// beyond the guarantee), priority (a preemptible tier) or preemption
	// (gangs).
	Dimension string `json:"dimension"`
	// Recorded: the directives are those Mandate recorded when it admitted
	// the workload (mandate.dev/directives), which its scheduler acts on;
	// false: decided now, as it would be admitted.
	Recorded bool `json:"recorded"`
	// Tenant, the tier and class it runs in, and the class's value.
	Tenant string `json:"tenant"`
	Tier   string `json:"tier"`
	Class  string `json:"class"`
	Value  int    `json:"value"`
	// Resource and the tenant's guarantee of it; Held is the GPUs the
	// tenant's non-preemptible work holds now (its running pods, every GPU
	// resource together).
	Resource   string `json:"resource,omitempty"`
	Guaranteed int64  `json:"guaranteed"`
	Held       int    `json:"held"`
	// GangMin is the gang's minimum (0: no gang).
	GangMin int `json:"gangMin,omitempty"`
	// Scheduler is the scheduler that would evict it, and Keeper how that
	// scheduler keeps the rule.
	Scheduler string `json:"scheduler"`
	Keeper    string `json:"keeper,omitempty"`
	Message   string `json:"message"`
}

// The Eviction codes.
const (
	NotEvictableGuaranteed   = "NOT_EVICTABLE_GUARANTEED"
	EvictableBorrowed        = "EVICTABLE_BORROWED"
	EvictablePreemptibleTier = "EVICTABLE_PREEMPTIBLE_TIER"
	NotEvictableGang         = "NOT_EVICTABLE_GANG"
)

// evictionOf explains the eviction rule of an admitted workload: by the
// directives Mandate recorded on it when there are any (trusted: the
// validating webhook refuses edits of them), else by those decided now;
// nil when it would not be admitted.
func evictionOf(obj *unstructured.Unstructured, decided *evaluator.Directives, e *Explanation, h holders) *Eviction {
	d, recorded, err := scheduler.RecordedDirectives(obj.GetAnnotations())
	if err != nil || !recorded {
		if decided == nil {
			return nil
		}
		d = *decided
	}
	m := h.model
	tier := d.TierName()
	value, _ := m.ClassValue(d.PriorityClass)
	ev := &Eviction{Recorded: recorded, Tenant: e.Workload.Tenant, Tier: tier, Class: d.PriorityClass,
		Value: value, Scheduler: d.Scheduler, GangMin: d.GangMin}
	ev.Resource = e.Shape.Resource
	if ev.Resource == "" {
		ev.Resource = topology.DefaultGPUResource
	}
	if l, ok := m.QuotaOf(ev.Tenant, ev.Resource, ""); ok {
		ev.Guaranteed = l.Guaranteed
	}
	for _, x := range h.byTenant[ev.Tenant] {
		if !x.preemptible {
			ev.Held += x.gpus
		}
	}
	f, _ := facts.Lookup(d.Scheduler)
	title := f.Title
	if title == "" {
		title = "its scheduler"
	}
	switch {
	case !d.Preemptible:
		ev.Code, ev.Dimension = NotEvictableGuaranteed, "quota"
		ev.Keeper = keeper(f, title)
		ev.Message = fmt.Sprintf("not evictable: non-preemptible %s work within tenant %s's guarantee (%d of %d %s); %s",
			tier, ev.Tenant, ev.Held, ev.Guaranteed, ev.Resource, ev.Keeper)
	case f.NeverEvictsGangs && d.GangMin > 1:
		ev.Code, ev.Dimension = NotEvictableGang, "preemption"
		ev.Message = fmt.Sprintf("not evictable while it runs at its gang minimum of %d: %s never breaks a gang (its gang plugin vetoes every victim below the minimum), though its %s work is preemptible (class %s, value %d)",
			d.GangMin, title, tier, d.PriorityClass, ev.Value)
	case m.Priorities[tier].Preemptible:
		ev.Evictable = true
		ev.Code, ev.Dimension = EvictablePreemptibleTier, "priority"
		ev.Message = fmt.Sprintf("evictable first: preemptible tier %s (class %s, value %d), below the borrowed band and every guaranteed tier%s",
			tier, d.PriorityClass, ev.Value, whole(d.GangMin))
	default:
		ev.Evictable = true
		ev.Code, ev.Dimension = EvictableBorrowed, "quota"
		ev.Message = fmt.Sprintf("evictable before any guaranteed work: borrowed beyond tenant %s's guarantee of %d %s (class %s, value %d)%s",
			ev.Tenant, ev.Guaranteed, ev.Resource, d.PriorityClass, ev.Value, whole(d.GangMin))
	}
	if !recorded {
		ev.Message += " (as it would be admitted now)"
	}
	return ev
}

// keeper says how a scheduler keeps work within a guarantee from being
// evicted: by its preemptibility key, by never reclaiming within a
// queue's nominal quota (a scheduler that owns quota), or, for one that
// ranks by priority alone, by Mandate's eviction guard.
func keeper(f facts.Scheduler, title string) string {
	switch {
	case f.Preemptibility.Name != "":
		return fmt.Sprintf("%s never evicts it: its %s is %q", title, f.Preemptibility.Describe(), f.Preemptibility.NonPreemptible)
	case f.OwnsQuota:
		return fmt.Sprintf("%s never reclaims it: it runs within its queue's nominal quota, the guarantee", title)
	}
	return fmt.Sprintf("Mandate's eviction guard refuses its eviction by the %s", strings.TrimPrefix(title, "the "))
}

func whole(gangMin int) string {
	if gangMin > 1 {
		return fmt.Sprintf("; its gang of %d goes whole", gangMin)
	}
	return ""
}
