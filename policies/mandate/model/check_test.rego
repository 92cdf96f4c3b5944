# METADATA
# description: |
#   The model checker in `mandate opa test`: the consistency rules of the
#   authority data (data.mandate.model) that Rego can say, and the Go
#   checker itself (package modelcheck, with its JSON Schema: unknown keys,
#   types) through the test builtin mandate.model_problems, so that a bad
#   model fails here as it fails `mandate model check`, `mandate bundle
#   build --test` and bundle activation. Each problem starts with the JSON
#   path it is about.
#   Independent of the organisation: it checks whatever data.json says, and
#   its own tests break a small model of their own, so an organisation that
#   replaces data.json and model_test.rego keeps it.
package mandate.model_check_test

import data.mandate.enforcement
import data.mandate.lib
import data.mandate.model

# The model passes every check.
test_the_model_passes_every_check if {
	print("authority model problems:", problems)
	count(problems) == 0
}

# And the Go checker's, which `mandate opa` registers for tests: its JSON
# Schema (unknown and misspelt keys, types, required keys) and every check,
# with the messages of `mandate model check`.
test_the_model_passes_the_model_checker if {
	ps := mandate.model_problems(model)
	print("mandate model check:", ps)
	ps == []
}

# problems are the model's problems, each "<JSON path>: <what is wrong>".

# Hierarchy: parents are tenants, no parent loops, and no tenant is deeper
# than mandate.lib.chain walks: the one depth limit (MaxDepth of the Go
# package model, tied to this walk by a Go test).

problems contains sprintf("tenants.%s.parent: parent %q is not a tenant of the model", [name, p]) if {
	some name, t in model.tenants
	p := object.get(t, "parent", "")
	p != ""
	not model.tenants[p]
}

_parents := {name: {p} |
	some name, t in model.tenants
	p := object.get(t, "parent", "")
	p != ""
}

# _cyclic: the tenants that are their own ancestors.
_cyclic contains name if {
	some name, ps in _parents
	name in graph.reachable(_parents, ps)
}

problems contains sprintf("tenants.%s.parent: tenant %s is its own ancestor: the parents form a cycle", [name, name]) if {
	some name in _cyclic
}

# _chain(name) is name and its ancestors as mandate.lib walks them.
_chain(name) := c if {
	c := lib.chain with input as {"namespace": {"labels": {"mandate.dev/tenant": name}}}
}

# _rooted(name): name's chain reaches no cycle.
_rooted(name) if {
	every a in _chain(name) {
		not a in _cyclic
	}
}

problems contains sprintf("tenants.%s.parent: tenant %s is deeper than the %d tenants (itself and its ancestors) Mandate walks", [name, name, count(c)]) if {
	some name, _ in model.tenants
	_rooted(name)
	c := _chain(name)
	object.get(model.tenants, [c[count(c) - 1], "parent"], "") != ""
}

# Quota: a guarantee is part of the ceiling, and the tenants a tenant
# limits directly (its nearest descendants with a quota for the resource)
# guarantee no more together than it does.

_quota_path(name, r) := sprintf("tenants.%s.quota[%s].guaranteed", [name, json.marshal(r)])

problems contains sprintf("%s: tenant %s guarantees %v %s, above its ceiling of %v", [_quota_path(name, r), name, q.guaranteed, r, q.ceiling]) if {
	some name, t in model.tenants
	some r, q in object.get(t, "quota", {})
	q.guaranteed > q.ceiling
}

# _limiter(name, r) is the nearest ancestor of name with a quota for r.
_limiter(name, r) := [a |
	c := _chain(name)
	some a in array.slice(c, 1, count(c))
	model.tenants[a].quota[r]
][0]

problems contains sprintf("%s: the tenants under %s guarantee %v %s together, more than the %v %s guarantees", [_quota_path(name, r), name, total, r, q.guaranteed, name]) if {
	some name, t in model.tenants
	some r, q in object.get(t, "quota", {})
	total := sum([g |
		some child, ct in model.tenants
		g := ct.quota[r].guaranteed
		_rooted(child)
		_limiter(child, r) == name
	])
	total > q.guaranteed
}

# Priority classes: every class named is a tier, and a tenant's classes
# are a subset of its parent's (a tenant without a list inherits the
# nearest ancestor's, as mandate.lib.allowed_classes does).

_unknown_class := "priority class %q is not a tier of the model"

problems contains sprintf(concat("", ["tenants.%s.priorityClasses[%d]: ", _unknown_class]), [name, i, c]) if {
	some name, t in model.tenants
	some i, c in object.get(t, "priorityClasses", [])
	not model.priorities[c]
}

problems contains sprintf(concat("", ["classDefaults.%s: ", _unknown_class]), [k, c]) if {
	some k, c in object.get(model, "classDefaults", {})
	not model.priorities[c]
}

problems contains sprintf(concat("", ["preemption.mayPreempt.%s: ", _unknown_class]), [c, c]) if {
	some c, _ in model.preemption.mayPreempt
	not model.priorities[c]
}

problems contains sprintf(concat("", ["preemption.mayPreempt.%s[%d]: ", _unknown_class]), [c, i, v]) if {
	some c, victims in model.preemption.mayPreempt
	some i, v in victims
	not model.priorities[v]
}

_allowed(name) := a if {
	a := lib.allowed_classes with input as {"namespace": {"labels": {"mandate.dev/tenant": name}}}
}

problems contains sprintf("tenants.%s.priorityClasses[%d]: tenant %s may use %s, but its parent %s may not", [name, i, name, c, t.parent]) if {
	some name, t in model.tenants
	model.tenants[t.parent]
	_rooted(name)
	some i, c in t.priorityClasses
	not c in _allowed_or_none(t.parent)
}

_allowed_or_none(name) := a if {
	a := _allowed(name)
} else := []

# Preemption: a tier may preempt only lower, preemptible tiers.

problems contains sprintf("preemption.mayPreempt.%s[%d]: %s (%v) may preempt %s (%v), a tier as high or higher", [c, i, c, model.priorities[c].value, v, model.priorities[v].value]) if {
	some c, victims in model.preemption.mayPreempt
	some i, v in victims
	model.priorities[v].value >= model.priorities[c].value
}

problems contains sprintf("preemption.mayPreempt.%s[%d]: %s may preempt %s, but %s is not preemptible", [c, i, c, v, v]) if {
	some c, victims in model.preemption.mayPreempt
	some i, v in victims
	model.priorities[v].preemptible == false
}

# Schedulers: each is one Mandate has an adapter for, and no two tenants
# on one scheduler share a queue (as mandate.directives names them).

_schedulers := {"volcano", "kai", "kueue", "default"}

problems contains sprintf("tenants.%s.scheduler: unknown scheduler %q: known schedulers are volcano, kai and default", [name, t.scheduler]) if {
	some name, t in model.tenants
	s := t.scheduler
	not s in _schedulers
}

_queues := {name: [s, q] |
	some name, t in model.tenants
	_rooted(name)
	s := array.concat([x | some a in _chain(name); x := model.tenants[a].scheduler], ["default"])[0]
	q := object.get(t, "queue", name)
}

problems contains sprintf("tenants.%s.queue: tenant %s's work goes to %s queue %q, which is tenant %s's queue too", [name, name, sq[0], sq[1], other]) if {
	some name, sq in _queues
	some other, osq in _queues
	other < name
	sq == osq
}

# Topology: rules name levels, prefer none wider than they require, go
# smallest first and end with a rule without maxGPUs; level names are
# distinct.

_levels := model.topology.levels

_rules := model.topology.rules

_index(name) := min({i | some i, l in _levels; l.name == name})

problems contains sprintf("topology.levels[%d].name: level %q is topology.levels[%d] too", [i, l.name, j]) if {
	some i, l in _levels
	j := _index(l.name)
	j < i
}

problems contains sprintf("topology.rules[%d].%s: level %q is not a level of the topology", [i, key, r[key]]) if {
	some i, r in _rules
	some key in ["required", "preferred"]
	r[key]
	not _index(r[key])
}

problems contains sprintf("topology.rules[%d].preferred: preferred level %s is wider than the required %s", [i, r.preferred, r.required]) if {
	some i, r in _rules
	_index(r.preferred) < _index(r.required)
}

problems contains sprintf("topology.rules[%d]: a rule without maxGPUs covers every gang, so the rules after it never apply", [i]) if {
	some i, r in _rules
	not r.maxGPUs
	i < count(_rules) - 1
}

problems contains sprintf("topology.rules[%d].maxGPUs: maxGPUs %v is not above the %v of topology.rules[%d]", [i, r.maxGPUs, _rules[i - 1].maxGPUs, i - 1]) if {
	some i, r in _rules
	i > 0
	r.maxGPUs <= _rules[i - 1].maxGPUs
}

problems contains sprintf("topology.rules[%d].maxGPUs: the last rule stops at %v GPUs, so a larger gang has no topology rule", [i, r.maxGPUs]) if {
	i := count(_rules) - 1
	r := _rules[i]
	r.maxGPUs
}

# Enforcement: keyed by a dimension or a violation code, valued an action.

_dimensions := {"tenancy", "priority", "quota", "topology", "preemption"}

problems contains sprintf("enforcement.%s: %s is not an enforcement action: use deny, warn or dryrun", [k, json.marshal(a)]) if {
	some k, a in object.get(model, "enforcement", {})
	not a in enforcement.actions
}

problems contains sprintf("enforcement.%s: %q is neither a dimension nor a violation code, so it never applies", [k, k]) if {
	some k, _ in object.get(model, "enforcement", {})
	not k in _dimensions
	not regex.match(`^[A-Z][A-Z0-9_]*$`, k)
}

# The checks, each against a small sound model with one edit.

_sound := {
	"tenants": {
		"org": {
			"parent": "",
			"quota": {"nvidia.com/gpu": {"guaranteed": 16, "ceiling": 32}},
			"priorityClasses": ["low", "high"],
			"scheduler": "volcano",
		},
		"team-a": {"parent": "org", "quota": {"nvidia.com/gpu": {"guaranteed": 8, "ceiling": 16}}, "priorityClasses": ["low"]},
		"team-b": {"parent": "org", "quota": {"nvidia.com/gpu": {"guaranteed": 8, "ceiling": 16}}},
	},
	"priorities": {"low": {"value": 10, "preemptible": true}, "high": {"value": 20, "preemptible": false}},
	"classDefaults": {"training": "low", "batch": "low", "interactive": "high", "inference": "high"},
	"quotaPolicy": {"overGuarantee": "deny"},
	"preemption": {"mayPreempt": {"high": ["low"], "low": []}, "gangsWhole": true},
	"topology": {
		"levels": [
			{"name": "zone", "nodeLabel": "topology.kubernetes.io/zone"},
			{"name": "node", "nodeLabel": "kubernetes.io/hostname"},
		],
		"rules": [{"maxGPUs": 8, "required": "node"}, {"required": "zone", "preferred": "node"}],
	},
	"enforcement": {"quota": "warn", "TOPOLOGY_WAITS": "dryrun"},
}

# _problems(patch) are the problems of the sound model with a JSON patch.
_problems(patch) := ps if {
	ps := problems with data.mandate.model as json.patch(_sound, patch)
}

_set(path, value) := {"op": "add", "path": path, "value": value}

# _at(ps, path): a problem of ps is about path.
_at(ps, path) if {
	some p in ps
	startswith(p, concat("", [path, ": "]))
}

test_a_sound_model_has_no_problems if {
	count(problems) == 0 with data.mandate.model as _sound
}

test_the_model_checker_catches_a_misspelt_key if {
	mandate.model_problems(_sound) == []
	ps := mandate.model_problems(json.patch(_sound, [_set("/tenants/team-a/quota/nvidia.com~1gpu", {"guarenteed": 8, "ceiling": 16})]))
	some p in ps
	p == `tenants.team-a.quota["nvidia.com/gpu"].guarenteed: unknown key "guarenteed": did you mean "guaranteed"?`
}

test_catches_an_unknown_parent if {
	_at(_problems([_set("/tenants/team-a/parent", "orgg")]), "tenants.team-a.parent")
}

test_catches_a_cycle if {
	ps := _problems([_set("/tenants/org/parent", "team-a")])
	_at(ps, "tenants.org.parent")
	_at(ps, "tenants.team-a.parent")
}

test_catches_a_chain_too_deep if {
	# team-a is 2 deep; d3 … d7 make a chain of 7.
	deeper := [_set(sprintf("/tenants/d%d", [i]), {"parent": parent}) |
		some i in numbers.range(3, 7)
		parent := {true: "team-a", false: sprintf("d%d", [i - 1])}[i == 3]
	]
	ps := _problems(deeper)
	_at(ps, "tenants.d7.parent")
	not _at(ps, "tenants.d6.parent")
}

test_catches_a_guarantee_above_ceiling if {
	_at(_problems([_set("/tenants/team-a/quota/nvidia.com~1gpu/guaranteed", 24)]), `tenants.team-a.quota["nvidia.com/gpu"].guaranteed`)
}

test_catches_children_guaranteeing_more_than_their_parent if {
	_at(_problems([_set("/tenants/team-b/quota/nvidia.com~1gpu/guaranteed", 9)]), `tenants.org.quota["nvidia.com/gpu"].guaranteed`)
}

test_catches_unknown_priority_classes if {
	_at(_problems([_set("/tenants/team-a/priorityClasses", ["lo"])]), "tenants.team-a.priorityClasses[0]")
	_at(_problems([_set("/classDefaults/batch", "lo")]), "classDefaults.batch")
	_at(_problems([_set("/preemption/mayPreempt/high", ["lo"])]), "preemption.mayPreempt.high[0]")
	_at(_problems([_set("/preemption/mayPreempt/top", [])]), "preemption.mayPreempt.top")
}

test_catches_classes_beyond_the_parents if {
	_at(_problems([_set("/tenants/a-1", {"parent": "team-a", "priorityClasses": ["high"]})]), "tenants.a-1.priorityClasses[0]")

	# team-b inherits org's classes: high is among them.
	count(_problems([_set("/tenants/b-1", {"parent": "team-b", "priorityClasses": ["high"]})])) == 0
}

test_catches_preemption_against_the_tiers if {
	ps := _problems([_set("/preemption/mayPreempt/low", ["high"])])
	some higher in ps
	startswith(higher, "preemption.mayPreempt.low[0]: low (10) may preempt high (20), a tier as high or higher")
	some protected in ps
	startswith(protected, "preemption.mayPreempt.low[0]: low may preempt high, but high is not preemptible")
}

test_catches_an_unknown_scheduler if {
	_at(_problems([_set("/tenants/team-a/scheduler", "slurm")]), "tenants.team-a.scheduler")
}

test_catches_a_shared_queue if {
	_at(_problems([_set("/tenants/team-b/queue", "team-a")]), "tenants.team-b.queue")

	# One name on two schedulers is two queues.
	count(_problems([_set("/tenants/team-b/queue", "team-a"), _set("/tenants/team-b/scheduler", "kai")])) == 0
}

test_catches_topology_rules_against_the_levels if {
	_at(_problems([_set("/topology/rules/0/required", "rack")]), "topology.rules[0].required")
	_at(_problems([_set("/topology/rules/1/preferred", "rack")]), "topology.rules[1].preferred")
	_at(_problems([_set("/topology/rules/0/preferred", "zone")]), "topology.rules[0].preferred")
	_at(_problems([_set("/topology/levels/1/name", "zone")]), "topology.levels[1].name")
}

test_catches_topology_rules_out_of_order if {
	_at(_problems([_set("/topology/rules", [{"required": "zone"}, {"maxGPUs": 8, "required": "node"}])]), "topology.rules[0]")
	_at(_problems([_set("/topology/rules", [{"maxGPUs": 8, "required": "node"}, {"maxGPUs": 8, "required": "zone"}])]), "topology.rules[1].maxGPUs")
}

test_catches_unknown_enforcement if {
	_at(_problems([_set("/enforcement/quota", "block")]), "enforcement.quota")
	_at(_problems([_set("/enforcement/quotas", "warn")]), "enforcement.quotas")
}
