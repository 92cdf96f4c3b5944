package modelcheck

import (
	"regexp"
	"slices"
	"strings"

	"github.com/mandate-dev/mandate/model"
)

// Actions are the enforcement actions, as mandate.enforcement.actions has
// them: what a violation does.
var Actions = []string{"deny", "warn", "dryrun"}

// Dimensions are the authority dimensions a violation belongs to, the keys
// of enforcement besides violation codes.
var Dimensions = []string{"tenancy", "priority", "quota", "topology", "preemption"}

// violationCode is how violation codes are spelt (QUOTA_EXCEEDS_CEILING).
var violationCode = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// checkEnforcement: every entry of enforcement is keyed by a dimension or a
// violation code, and its value is an action. An entry that is neither
// would silently never apply, or deny (mandate.enforcement denies for a
// value it does not know, never weaker).
func checkEnforcement(d *model.Model, r *reporter) {
	for _, k := range sortedKeys(d.Enforcement) {
		at := path("enforcement", k)
		if !slices.Contains(Dimensions, k) && !violationCode.MatchString(k) {
			r.add(at, "%q is neither a dimension (%s) nor a violation code (UPPER_CASE, e.g. QUOTA_EXCEEDS_CEILING), so this entry never applies",
				k, strings.Join(Dimensions, ", "))
		}
		if a := d.Enforcement[k]; !slices.Contains(Actions, a) {
			r.add(at, "%q is not an enforcement action: use %s (an unknown action denies)", a, strings.Join(Actions, ", "))
		}
	}
}
