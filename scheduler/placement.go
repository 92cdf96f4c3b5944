package scheduler

import (
	"maps"
	"slices"

	"github.com/mandate-dev/mandate/evaluator"
)

// Placement keys on pod templates.
const (
	// LabelIsolation names, on the pods of a tenant isolated at some
	// topology level, the tenant whose isolation rule it is (its isolation
	// unit): the pods' required pod anti-affinity keeps every pod of
	// another tenant out of their domains of that level, and the
	// scheduler honours an existing pod's anti-affinity against incoming
	// pods too, so other tenants' pods stay out as well.
	LabelIsolation = "mandate.dev/isolation"
	// labelTenant is the tenant label every admitted pod carries (the
	// directives' labels): isolation's anti-affinity selects the pods of
	// other tenants by it.
	labelTenant = "mandate.dev/tenant"
)

// applyPlacement renders the placement directive onto a pod template, the
// same for every scheduler (each one honours node affinity and pod
// anti-affinity): the pool as a required node affinity (added to every
// term the template has, so the pod's own choices are kept and narrowed),
// the preferred pool as a preferred node affinity, and isolation as a
// required pod anti-affinity against other tenants' pods on the
// isolation level's node label. Idempotent.
func applyPlacement(t podTemplate, p *evaluator.Placement) {
	if p == nil {
		return
	}
	if len(p.NodeSelector) > 0 {
		required := ensureMap(ensureMap(ensureMap(t.spec(), "affinity"), "nodeAffinity"), "requiredDuringSchedulingIgnoredDuringExecution")
		terms, _ := required["nodeSelectorTerms"].([]any)
		if len(terms) == 0 {
			terms = []any{map[string]any{}}
		}
		for _, term := range terms {
			if m, ok := term.(map[string]any); ok {
				addExpressions(m, p.NodeSelector)
			}
		}
		required["nodeSelectorTerms"] = terms
	}
	if len(p.PreferredSelector) > 0 {
		nodeAffinity := ensureMap(ensureMap(t.spec(), "affinity"), "nodeAffinity")
		field := "preferredDuringSchedulingIgnoredDuringExecution"
		preference := map[string]any{}
		addExpressions(preference, p.PreferredSelector)
		entry := map[string]any{"weight": int64(AffinityWeight), "preference": preference}
		prefs, _ := nodeAffinity[field].([]any)
		if !slices.ContainsFunc(prefs, func(have any) bool { return sameTerm(have, entry) }) {
			nodeAffinity[field] = append(prefs, entry)
		}
	}
	if p.IsolationUnit != "" && p.IsolationLabel != "" {
		setAll(ensureMap(t.root, "metadata"), "labels", map[string]string{LabelIsolation: p.IsolationUnit})
		term := map[string]any{
			"labelSelector": map[string]any{"matchExpressions": []any{
				map[string]any{"key": labelTenant, "operator": "Exists"},
				map[string]any{"key": LabelIsolation, "operator": "NotIn", "values": []any{p.IsolationUnit}},
			}},
			"namespaceSelector": map[string]any{},
			"topologyKey":       p.IsolationLabel,
		}
		anti := ensureMap(ensureMap(t.spec(), "affinity"), "podAntiAffinity")
		field := "requiredDuringSchedulingIgnoredDuringExecution"
		terms, _ := anti[field].([]any)
		if !slices.ContainsFunc(terms, func(have any) bool { return sameTerm(have, term) }) {
			anti[field] = append(terms, term)
		}
	}
}

// addExpressions adds an In expression per selector label to a node
// selector term, unless an equal one is there.
func addExpressions(term map[string]any, sel map[string][]string) {
	exprs, _ := term["matchExpressions"].([]any)
	for _, key := range slices.Sorted(maps.Keys(sel)) {
		values := make([]any, len(sel[key]))
		for i, v := range sel[key] {
			values[i] = v
		}
		e := map[string]any{"key": key, "operator": "In", "values": values}
		if !slices.ContainsFunc(exprs, func(have any) bool { return sameTerm(have, e) }) {
			exprs = append(exprs, e)
		}
	}
	term["matchExpressions"] = exprs
}
