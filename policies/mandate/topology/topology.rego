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

_levels := [l.name | some l in model.topology.levels]

# index of a level, 0 for the widest.
_level_index := {name: i | some i, name in _levels}

# The node label and tier of each level by name; tiers count from the
# narrowest (0) upwards, the way Volcano's highestTierAllowed counts network
# tiers.
levels := {l.name: {"label": l.nodeLabel, "tier": (count(_levels) - 1) - i} |
	some i, l in model.topology.levels
}

# The first rule whose maxGPUs covers the whole gang (a rule without maxGPUs
# covers everything).
_rule := [r |
	some r in model.topology.rules
	lib.workload.totalGPUs <= object.get(r, "maxGPUs", lib.workload.totalGPUs)
][0]

_requested := lib.workload.topology.required

_requested_preferred := lib.workload.topology.preferred

deny contains v if {
	some name in [_requested, _requested_preferred]
	name != ""
	not _level_index[name]
	v := lib.violation("TOPOLOGY_UNKNOWN_LEVEL", "topology", sprintf(
		"topology level %q is not one of this cluster's levels: %s",
		[name, concat(", ", _levels)],
	))
}

# The required level: the rule's, or a tighter one the workload asks for.
required_level := _requested if {
	_requested != ""
	_level_index[_requested] > _level_index[_rule.required]
} else := _rule.required

# The preferred level: what the workload asks for, else the rule's; never
# wider than the required level.
preferred_level := p if {
	some p in [_requested_preferred, object.get(_rule, "preferred", "")]
	p != ""
	_level_index[p] >= _level_index[required_level]
}

_preferred := p if {
	p := preferred_level
} else := ""

# One answer per decision from the placement builtin (the live snapshot, or
# the fixture in data.mandate.cluster in tests).
placement := mandate.placement({
	"pods": lib.gang_size,
	"gpusPerPod": lib.workload.gpusPerPod,
	"resource": lib.workload.gpuResource,
	"product": lib.workload.gpuProduct,
	"requiredLevel": required_level,
	"preferredLevel": _preferred,
	"cluster": _cluster,
}) if lib.gpu_workload

# A fixture cluster in tests; null in production, where the builtin reads the
# live snapshot.
default _cluster := null

_cluster := data.mandate.cluster

_gang := sprintf("a gang of %d pods × %d %s%s", [
	lib.gang_size, lib.workload.gpusPerPod, lib.workload.gpuResource,
	_product_suffix,
])

_product_suffix := sprintf(" (%s)", [lib.workload.gpuProduct]) if {
	lib.workload.gpuProduct != ""
} else := ""

deny contains v if {
	not placement.fitsEmpty
	placement.largest.podSlots > 0
	v := lib.violation("TOPOLOGY_NEVER_FITS", "topology", sprintf(
		"%s must sit within one %s, but the largest %s (%s) holds only %d such pods even when empty; ask for at most %d pods or fewer GPUs per pod",
		[_gang, required_level, required_level, placement.largest.domain, placement.largest.podSlots, placement.largest.podSlots],
	))
}

deny contains v if {
	not placement.fitsEmpty
	placement.largest.podSlots == 0
	v := lib.violation("TOPOLOGY_NEVER_FITS", "topology", sprintf(
		"%s can never be placed: no healthy node in this cluster offers %d %s%s per pod",
		[_gang, lib.workload.gpusPerPod, lib.workload.gpuResource, _product_suffix],
	))
}

warn contains v if {
	placement.fitsEmpty
	not placement.fitsNow
	v := lib.violation("TOPOLOGY_WAITS", "topology", sprintf(
		"%s does not fit right now: the roomiest %s (%s) has %d of the %d pod slots it needs free; it waits in the queue until capacity frees up",
		[_gang, required_level, placement.bestNow.domain, placement.bestNow.podSlots, lib.gang_size],
	))
}

warn contains v if {
	lib.gpu_workload
	not placement
	not _requested_unknown
	v := lib.violation("TOPOLOGY_UNCHECKED", "topology", "no cluster snapshot was available, so topology placement was not checked")
}

_requested_unknown if {
	some name in [_requested, _requested_preferred]
	name != ""
	not _level_index[name]
}

explain := {
	"dimension": "topology",
	"verdict": lib.verdict(deny, warn),
	"limit": sprintf("one %s; the largest holds %d pods", [required_level, placement.largest.podSlots]),
	"current": _placement_now,
} if {
	lib.tenant_known
	placement
}

_placement_now := sprintf("fits in %s %s (score %v, %d GPUs left there)", [
	placement.level, placement.domain, round(placement.score * 100) / 100, placement.freeAfter,
]) if {
	placement.fitsNow
} else := sprintf("roomiest %s %s has %d of %d pod slots free", [
	required_level, placement.bestNow.domain, placement.bestNow.podSlots, lib.gang_size,
])
