package scheduler

import (
	"fmt"
	"reflect"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/workload"
)

// LabelGang names, on the pod templates of a gang whose topology level
// Volcano has no tier for (the node, tier 0), the gang their pods belong
// to: the pods' required pod affinity among themselves selects it.
const LabelGang = "mandate.dev/gang"

// AffinityWeight is the weight of the preferred pod affinity a preferred
// node level becomes: the highest the API server allows, as the model's
// preference is the only one Mandate expresses.
const AffinityWeight = 100

// nodeLevel is how a gang is kept on one node when its scheduler has no
// construct for the node level: a pod affinity among the gang's pods (the
// pods labelled LabelGang=gang) on the level's node label. Required says
// whether it is the required level (requiredDuringScheduling…) or only the
// preferred one.
type nodeLevel struct {
	Level, TopologyKey, Gang string
	Required                 bool
}

// volcanoNodeLevel is the node level Volcano's networkTopology cannot carry
// (tier 0 is below its lowest HyperNode tier) for a gang of more than one
// pod: the required level when it is the node, else the preferred one when
// it is. ok is false when there is none, or when the gang has no name to
// label its pods with (AdvisoryLevels then warns).
func volcanoNodeLevel(w workload.Workload, d evaluator.Directives) (nodeLevel, bool) {
	if w.Pods <= 1 {
		return nodeLevel{}, false // one pod is on one node
	}
	var l nodeLevel
	switch {
	case d.RequiredLevel != "" && d.RequiredTier == 0 && d.RequiredLabel != "":
		l = nodeLevel{Level: d.RequiredLevel, TopologyKey: d.RequiredLabel, Required: true}
	case d.PreferredLevel != "" && d.PreferredTier == 0 && d.PreferredLabel != "":
		l = nodeLevel{Level: d.PreferredLevel, TopologyKey: d.PreferredLabel}
	default:
		return nodeLevel{}, false
	}
	if l.Gang = PodGroupName(w); l.Gang == "" {
		return nodeLevel{}, false
	}
	return l, true
}

// apply labels the template's pods with the gang and adds the pod affinity
// term among them, unless an equal term is there already (idempotent).
// Terms the template already has are kept.
func (l nodeLevel) apply(t podTemplate) {
	setAll(ensureMap(t.root, "metadata"), "labels", map[string]string{LabelGang: l.Gang})
	term := map[string]any{
		"labelSelector": map[string]any{"matchLabels": map[string]any{LabelGang: l.Gang}},
		"topologyKey":   l.TopologyKey,
	}
	field := "preferredDuringSchedulingIgnoredDuringExecution"
	entry := map[string]any{"weight": int64(AffinityWeight), "podAffinityTerm": term}
	if l.Required {
		field, entry = "requiredDuringSchedulingIgnoredDuringExecution", term
	}
	podAffinity := ensureMap(ensureMap(t.spec(), "affinity"), "podAffinity")
	terms, _ := podAffinity[field].([]any)
	for _, have := range terms {
		if sameTerm(have, entry) {
			return
		}
	}
	podAffinity[field] = append(terms, entry)
}

// sameTerm compares a term found in an object (decoded from JSON: numbers
// may be float64 or int64) with one apply builds.
func sameTerm(have, want any) bool {
	if h, ok := have.(map[string]any); ok {
		if wm, ok := want.(map[string]any); ok {
			if len(h) != len(wm) {
				return false
			}
			for k, v := range wm {
				if !sameTerm(h[k], v) {
					return false
				}
			}
			return true
		}
	}
	if n, ok := want.(int64); ok {
		switch h := have.(type) {
		case int64:
			return h == n
		case float64:
			return h == float64(n)
		case int:
			return int64(h) == n
		}
		return false
	}
	return reflect.DeepEqual(have, want)
}

// AdvisoryLevels lists, as admission warnings, the topology levels of d
// that d's scheduler is not told for w, so the decision does not claim an
// enforcement that will not happen:
//   - Volcano: a node level (tier 0) for a gang with no name yet to label
//     its pods with (generateName only), where no pod affinity can be
//     rendered;
//   - the default scheduler: any required level (it is told no topology).
//
// KAI is told every level through its Topology; whether that Topology has
// the level is a cluster fact (review.Names checks it). Nil when every
// level reaches the scheduler.
func AdvisoryLevels(w workload.Workload, d evaluator.Directives) []string {
	var out []string
	switch d.Scheduler {
	case Volcano:
		if w.Pods <= 1 || PodGroupName(w) != "" {
			return nil
		}
		for _, l := range []struct {
			kind, level string
			tier        int
		}{{"required", d.RequiredLevel, d.RequiredTier}, {"preferred", d.PreferredLevel, d.PreferredTier}} {
			if l.level != "" && l.tier == 0 {
				out = append(out, fmt.Sprintf("the %s topology level %s is advisory for Volcano: Volcano has no tier for a single node, "+
					"and this %s has no name yet (only generateName) to keep its pods together by pod affinity", l.kind, l.level, w.Kind))
			}
		}
	case Default, "":
		if d.RequiredLevel != "" {
			out = append(out, fmt.Sprintf("the required topology level %s is advisory: the default scheduler is told no topology", d.RequiredLevel))
		}
	}
	return out
}
