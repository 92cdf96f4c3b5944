package modelcheck

import (
	"sort"

	"github.com/mandate-dev/mandate/model"
)

// document is the typed view of the authority model the checks read: the
// fields of policies/schema/model.schema.json that have rules a schema
// cannot express.
type document struct {
	Tenants       map[string]tenant `json:"tenants"`
	Priorities    map[string]tier   `json:"priorities"`
	ClassDefaults map[string]string `json:"classDefaults"`
	Preemption    struct {
		MayPreempt map[string][]string `json:"mayPreempt"`
	} `json:"preemption"`
	Topology struct {
		Levels []struct {
			Name      string `json:"name"`
			NodeLabel string `json:"nodeLabel"`
		} `json:"levels"`
		Rules []struct {
			MaxGPUs   *int   `json:"maxGPUs"`
			Required  string `json:"required"`
			Preferred string `json:"preferred"`
		} `json:"rules"`
	} `json:"topology"`
	Enforcement   map[string]string `json:"enforcement"`
	DeviceClasses map[string]string `json:"deviceClasses"`
	GPUMemoryMiB  map[string]any    `json:"gpuMemoryMiB"`
}

type tenant struct {
	Parent string           `json:"parent"`
	Quota  map[string]quota `json:"quota"`
	// PriorityClasses is nil when the tenant inherits its parent's.
	PriorityClasses *[]string `json:"priorityClasses"`
	Scheduler       string    `json:"scheduler"`
	Queue           string    `json:"queue"`
}

type quota struct {
	Guaranteed int `json:"guaranteed"`
	Ceiling    int `json:"ceiling"`
	// Products is the quota per GPU product of the resource.
	Products map[string]productQuota `json:"products"`
}

type productQuota struct {
	Guaranteed int `json:"guaranteed"`
	Ceiling    int `json:"ceiling"`
}

type tier struct {
	Value       int  `json:"value"`
	Preemptible bool `json:"preemptible"`
}

// tenantNames are the tenants, sorted: checks report in a stable order.
func (d *document) tenantNames() []string {
	return sortedKeys(d.Tenants)
}

// chain is the tenant and its ancestors, nearest first, as far as they are
// known tenants, at most model.MaxDepth+1 long (enough to tell a chain too
// deep), and stopping before a tenant repeats (a cycle).
func (d *document) chain(name string) []string {
	var out []string
	seen := map[string]bool{}
	for t := name; t != "" && !seen[t] && len(out) <= model.MaxDepth; t = d.Tenants[t].Parent {
		if _, ok := d.Tenants[t]; !ok {
			break
		}
		seen[t] = true
		out = append(out, t)
	}
	return out
}

// rooted: following the tenant's parents ends at a root, not at an unknown
// tenant or in a cycle. Checks that inherit along the hierarchy skip
// tenants that are not; the hierarchy check reports them.
func (d *document) rooted(name string) bool {
	_, ok := d.ancestry(name)
	return ok
}

// allowedClasses are the priority classes a tenant may use, as mandate.lib
// computes them: its own list, else the nearest ancestor's; ok false when
// no tenant of its chain lists any (it may use none).
func (d *document) allowedClasses(name string) (classes []string, from string, ok bool) {
	for _, t := range d.chain(name) {
		if pc := d.Tenants[t].PriorityClasses; pc != nil {
			return *pc, t, true
		}
	}
	return nil, "", false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
