# METADATA
# title: Topology constraints
# description: |
#   A gang must sit within one domain of the level its size requires
#   (data.mandate.model.topology.rules, smallest first). The placement builtin
#   answers whether it fits now and whether it could ever fit: a gang that
#   could never fit is denied naming the largest domain there is; one that
#   does not fit yet is admitted with a warning.
package mandate.topology

import data.mandate.lib
import data.mandate.model

# The model's topology facts, computed once per decision: the index of each
# level by name (0 for the widest), the rules whose maxGPUs covers the whole
# gang (a rule without maxGPUs covers everything) and the levels the workload
# names that the cluster does not have. Only what every decision reads: the
# level names and each level's label and tier are looked up when needed.
facts := {
	"index": index,
	"rules": [r |
		n := input.workload.totalGPUs
		some r in model.topology.rules
		n <= object.get(r, "maxGPUs", n)
	],
	"unknown": [name |
		some name in [input.workload.topology.required, input.workload.topology.preferred]
		name != ""
		not index[name]
	],
} if {
	index := {l.name: i | some i, l in model.topology.levels}
}

# level(name) is the node label and tier of the level called name (tiers
# count from the narrowest (0) upwards, the way Volcano's highestTierAllowed
# counts network tiers); an empty label and tier 0 for no such level.
level(name) := {"label": l.nodeLabel, "tier": (count(model.topology.levels) - 1) - i} if {
	i := facts.index[name]
	l := model.topology.levels[i]
} else := {"label": "", "tier": 0}

# The node label and tier of each level by name.
levels := {name: level(name) | some name, _ in facts.index}

deny contains v if {
	some name in facts.unknown
	v := lib.reason("TOPOLOGY_UNKNOWN_LEVEL", "topology", {"level": name}, sprintf(
		"topology level %q is not one of this cluster's levels: %s",
		[name, concat(", ", [l.name | some l in model.topology.levels])],
	))
}

# The level the workload asks for: its required level, else the model's
# level whose node label its kind's own key names (JobSet's
# exclusive-topology annotation; a label no level has asks for nothing).
asked_required := r if {
	r := input.workload.topology.required
	r != ""
} else := names[0] if {
	label := object.get(input.workload.topology, "requiredNodeLabel", "")
	label != ""
	names := [l.name | some l in model.topology.levels; l.nodeLabel == label]
	count(names) > 0
} else := ""

# The required level: the rule's, or a tighter one the workload asks for.
required_level := r if {
	r := asked_required
	r != ""
	facts.index[r] > facts.index[facts.rules[0].required]
} else := facts.rules[0].required

# The preferred level: what the workload asks for, else the rule's; never
# wider than the required level.
preferred_level := p if {
	p := preferred_or_empty
	p != ""
}

# preferred_or_empty is the preferred level, else "".
preferred_or_empty := p if {
	p := input.workload.topology.preferred
	_within_required(p)
} else := p if {
	p := object.get(facts.rules[0], "preferred", "")
	_within_required(p)
} else := ""

# _within_required(p): p is a level no wider than the required level.
_within_required(p) if {
	p != ""
	facts.index[p] >= facts.index[required_level]
}

# The pool the tenant's work is confined to (tenants.<t>.placement): the
# entry for the workload's class of the nearest tenant of its chain that
# has one, else the nearest allowed pool; with the rule that says so.
# Undefined when no tenant of the chain confines it.
confinement := array.concat(
	[{"pool": p, "rule": sprintf("tenants.%s.placement.classes.%s", [t, input.workload.class])} |
		some t in lib.chain
		p := model.tenants[t].placement.classes[input.workload.class]
	],
	[{"pool": p, "rule": sprintf("tenants.%s.placement.allowed", [t])} |
		some t in lib.chain
		p := model.tenants[t].placement.allowed
	],
)[0]

# The pool the builtin searches; "" for the whole cluster.
default pool := ""

pool := confinement.pool

# pool_selector(name) is a pool's node selector: node label → the values
# it may have (Go: model.Model.PoolSelector, whose test keeps the two in
# step).
pool_selector(name) := object.union(
	{l.nodeLabel: sort(p.domains) |
		p.level
		some l in model.topology.levels
		l.name == p.level
	},
	{k: [v] | some k, v in object.get(p, "nodeLabels", {})},
) if p := model.topology.pools[name]

# The pool the tenant's work prefers: the nearest preferred pool.
preferred_pool := [p | some t in lib.chain; p := model.tenants[t].placement.preferred][0]

# The tenant's isolation: the level and the tenant whose rule it is (its
# isolation unit: that tenant's subtree shares no domain of the level
# with other tenants' work).
isolation := [{"level": l, "unit": t, "label": level(l).label} |
	some t in lib.chain
	l := model.tenants[t].placement.isolation
][0]

_pool_suffix := sprintf(" in pool %s (%s)", [pool, confinement.rule]) if {
	pool != ""
} else := ""

# One answer per decision from the placement builtin (the live snapshot, or
# in Rego tests, the fixture in data.mandate.cluster, which only the test
# registration of `mandate opa test` reads).
placement := mandate.placement({
	"pods": lib.gang_size,
	"gpusPerPod": lib.workload.gpusPerPod,
	"resource": lib.workload.gpuResource,
	"product": lib.workload.gpuProduct,
	"requiredLevel": required_level,
	"preferredLevel": preferred_or_empty,
	"gpuShareMilli": object.get(lib.workload, "gpuShareMilli", 0),
	"pool": pool,
	"cluster": _cluster,
}) if lib.gpu_workload

# A fixture cluster in tests; null in production, where the builtin reads the
# live snapshot.
default _cluster := null

_cluster := data.mandate.cluster

_gang := sprintf("a gang of %d pods × %d %s%s%s", [
	lib.gang_size, lib.workload.gpusPerPod, lib.workload.gpuResource,
	_product_suffix, _share_suffix,
])

# Pods that share devices are placed packed onto them.
_share_suffix := sprintf(" (%d/1000 of each, shared)", [lib.workload.gpuShareMilli]) if {
	lib.workload.gpuShareMilli > 0
} else := ""

_product_suffix := sprintf(" (%s)", [lib.workload.gpuProduct]) if {
	lib.workload.gpuProduct != ""
} else := ""

deny contains v if {
	placement
	not placement.fitsEmpty
	v := _never_fits
}

# _gang_facts(limit) are the facts of a reason about the gang: the required
# level, the resource and product it asks for, the pod slots it needs
# (the gang's size) and limit, the pod slots a domain holds.
_gang_facts(limit) := {
	"level": required_level,
	"resource": lib.workload.gpuResource,
	"product": object.get(lib.workload, "gpuProduct", ""),
	"limit": limit,
	"needs": lib.gang_size,
	"pool": pool,
}

_never_fits := lib.reason("TOPOLOGY_NEVER_FITS", "topology", object.union(_gang_facts(placement.largest.podSlots), {"domain": placement.largest.domain}), sprintf(
	"%s must sit within one %s, but the largest %s%s (%s) holds only %d such pods even when empty; ask for at most %d pods or fewer GPUs per pod",
	[_gang, required_level, required_level, _pool_suffix, placement.largest.domain, placement.largest.podSlots, placement.largest.podSlots],
)) if {
	placement.largest.podSlots > 0
} else := lib.reason("TOPOLOGY_NEVER_FITS", "topology", _gang_facts(0), sprintf(
	"%s can never be placed: no healthy node%s offers %d %s%s per pod",
	[_gang, _nodes_where, lib.workload.gpusPerPod, lib.workload.gpuResource, _product_suffix],
)) if {
	placement.largest.podSlots == 0
}

_nodes_where := sprintf(" of pool %s (%s)", [pool, confinement.rule]) if {
	pool != ""
} else := " in this cluster"

warn contains v if {
	placement.fitsEmpty
	not placement.fitsNow
	v := lib.reason("TOPOLOGY_WAITS", "topology", _waits_facts, sprintf(
		"%s does not fit right now: %s; it waits in the queue until capacity frees up",
		[_gang, _roomiest],
	))
}

# An elastic gang is placed at its minimum; its maximum (every pod) may
# never fit in one domain of the required level, so it could never grow
# that far there. Say how many pods could.
warn contains v if {
	placement.fitsEmpty
	lib.workload.minPods > 0
	lib.workload.minPods < lib.workload.pods
	placement.largest.podSlots < lib.workload.pods
	facts := object.union(_gang_facts(placement.largest.podSlots), {"domain": placement.largest.domain, "needs": lib.workload.pods})
	v := lib.reason("TOPOLOGY_ELASTIC_MAX_NEVER_FITS", "topology", facts, sprintf(
		"the elastic gang may grow to %d pods × %d %s, but it must sit within one %s and the largest %s (%s) holds only %d such pods even when empty: it can grow to at most %d pods there",
		[
			lib.workload.pods, lib.workload.gpusPerPod, lib.workload.gpuResource, required_level, required_level,
			placement.largest.domain, placement.largest.podSlots, placement.largest.podSlots,
		],
	))
}

# _waits_facts are TOPOLOGY_WAITS's facts: the roomiest domain, when one has
# room for a pod, and the pod slots free there (current) of those the gang
# needs.
# (The objects are written out, not made with _gang_facts: on the admission
# path a function call and a union cost about sixty allocations.)
_waits_facts := {
	"level": required_level,
	"resource": lib.workload.gpuResource,
	"product": object.get(lib.workload, "gpuProduct", ""),
	"limit": placement.largest.podSlots,
	"needs": lib.gang_size,
	"domain": placement.bestNow.domain,
	"current": placement.bestNow.podSlots,
} if {
	placement.bestNow.podSlots > 0
} else := {
	"level": required_level,
	"resource": lib.workload.gpuResource,
	"product": object.get(lib.workload, "gpuProduct", ""),
	"limit": placement.largest.podSlots,
	"needs": lib.gang_size,
	"current": 0,
}

# _roomiest says how close the gang comes now, naming a domain only when one
# has room for a pod; otherwise which domains were considered and why none
# fits.
_roomiest := sprintf("the roomiest %s (%s) has %d of the %d pod slots it needs free", [
	required_level, placement.bestNow.domain, placement.bestNow.podSlots, lib.gang_size,
]) if {
	placement.bestNow.podSlots > 0
} else := sprintf("none of the %d %s domains considered has a node with %d free %s (the freest, %s, has %d free GPUs, at most %d on one node)", [
	placement.shortfall.domains, required_level, lib.workload.gpusPerPod, lib.workload.gpuResource,
	placement.shortfall.freest, placement.shortfall.freestGPUs, placement.shortfall.freestNodeGPUs,
]) if {
	placement.shortfall.freestGPUs > 0
} else := sprintf("no %s domain has a healthy node with %s%s", [
	required_level, lib.workload.gpuResource, _product_suffix,
]) if {
	placement.shortfall.domains == 0
} else := sprintf("none of the %d %s domains considered has a free %s%s", [
	placement.shortfall.domains, required_level, lib.workload.gpuResource, _product_suffix,
])

warn contains v if {
	lib.gpu_workload
	not placement
	count(facts.unknown) == 0
	v := lib.violation("TOPOLOGY_UNCHECKED", "topology", "no cluster snapshot was available, so topology placement was not checked")
}

explain := {
	"dimension": "topology",
	"verdict": lib.verdict(deny, warn),
	"limit": sprintf("one %s%s; the largest holds %d pods", [required_level, _pool_suffix, placement.largest.podSlots]),
	"current": _placement_now,
} if {
	lib.tenant_known
	placement
}

_placement_now := sprintf("fits in %s %s (score %v, %d GPUs left there)", [
	placement.level, placement.domain, round(placement.score * 100) / 100, placement.freeAfter,
]) if {
	placement.fitsNow
} else := _roomiest
