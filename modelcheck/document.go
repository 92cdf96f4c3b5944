package modelcheck

import (
	"sort"

	"github.com/mandate-dev/mandate/model"
)

// The checks read the one typed model (model.Model): a model that decodes
// but may break every rule, so the helpers below, like the model's own
// chain walks, stop at unknown tenants and cycles.

// tenantNames are the tenants, sorted: checks report in a stable order.
func tenantNames(d *model.Model) []string {
	return sortedKeys(d.Tenants)
}

// rooted: following the tenant's parents ends at a root, not at an unknown
// tenant or in a cycle. Checks that inherit along the hierarchy skip
// tenants that are not; the hierarchy check reports them.
func rooted(d *model.Model, name string) bool {
	_, ok := d.Ancestry(name)
	return ok
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
