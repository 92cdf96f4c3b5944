package modelcheck

import (
	"strings"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/topology"
)

// checkTopology: levels are no more than the cluster model takes and have
// distinct names and node labels; the rules name
// levels of the topology, prefer no level wider than they require, and go
// smallest first, as mandate.topology reads them (the first rule whose
// maxGPUs covers the gang decides), ending in a rule without maxGPUs so
// that every gang has one.
func checkTopology(d *model.Model, r *reporter) {
	if n := len(d.Topology.Levels); n > topology.MaxLevels {
		r.add(path("topology", "levels"), "%d levels: the cluster model takes at most %d", n, topology.MaxLevels)
	}
	index := map[string]int{}
	labels := map[string]int{}
	names := make([]string, 0, len(d.Topology.Levels))
	for i, l := range d.Topology.Levels {
		if j, ok := index[l.Name]; ok {
			r.add(path("topology", "levels", i, "name"), "level %q is topology.levels[%d] too: level names must be distinct", l.Name, j)
		} else {
			index[l.Name] = i
			names = append(names, l.Name)
		}
		if j, ok := labels[l.NodeLabel]; ok {
			r.add(path("topology", "levels", i, "nodeLabel"), "node label %q is topology.levels[%d]'s too: each level needs a label of its own", l.NodeLabel, j)
		} else {
			labels[l.NodeLabel] = i
		}
	}
	known := strings.Join(names, ", ")
	rules := d.Topology.Rules
	last := -1 // index of the last rule with maxGPUs seen
	for i, rule := range rules {
		ri, rok := index[rule.Required]
		if !rok {
			r.add(path("topology", "rules", i, "required"), "level %q is not a level of the topology (topology.levels: %s)", rule.Required, known)
		}
		if rule.Preferred != "" {
			pi, pok := index[rule.Preferred]
			switch {
			case !pok:
				r.add(path("topology", "rules", i, "preferred"), "level %q is not a level of the topology (topology.levels: %s)", rule.Preferred, known)
			case rok && pi < ri:
				r.add(path("topology", "rules", i, "preferred"), "preferred level %s is wider than the required %s (levels go widest first), so it is ignored: prefer %s or a narrower level",
					rule.Preferred, rule.Required, rule.Required)
			}
		}
		switch {
		case rule.MaxGPUs == nil && i < len(rules)-1:
			r.add(path("topology", "rules", i), "a rule without maxGPUs covers every gang, so the rules after it never apply: put it last")
		case rule.MaxGPUs != nil && last >= 0 && *rule.MaxGPUs <= *rules[last].MaxGPUs:
			r.add(path("topology", "rules", i, "maxGPUs"), "maxGPUs %d is not above the %d of topology.rules[%d]: rules go smallest first, so this one never applies",
				*rule.MaxGPUs, *rules[last].MaxGPUs, last)
		}
		if rule.MaxGPUs != nil {
			last = i
		}
	}
	if n := len(rules); n > 0 && rules[n-1].MaxGPUs != nil {
		r.add(path("topology", "rules", n-1, "maxGPUs"), "the last rule stops at %d GPUs, so a larger gang has no topology rule and is placed unchecked: end with a rule without maxGPUs",
			*rules[n-1].MaxGPUs)
	}
}
