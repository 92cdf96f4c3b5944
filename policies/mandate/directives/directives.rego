# METADATA
# title: Scheduler directives
# description: |
#   What the authority model wants the tenant's scheduler to enforce: which
#   scheduler and queue, which priority class, whether the work is
#   preemptible, the gang minimum and the required and preferred topology
#   levels. The Go scheduler adapters decide how each scheduler is told.
package mandate.directives

import data.mandate.lib
import data.mandate.model
import data.mandate.preemption
import data.mandate.topology

directives := object.union(object.union(_topology, _placement), {
	"scheduler": array.concat([s | some t in lib.chain; s := model.tenants[t].scheduler], ["default"])[0],
	"queue": object.get(model.tenants[lib.tenant], "queue", lib.tenant),
	"priorityClass": _priority_class,
	"tier": lib.effective_class,
	"preemptible": preemption.preemptible_flag,
	"gangMin": preemption.gang_min,
	"labels": {"mandate.dev/tenant": lib.tenant},
	"annotations": object.union({"mandate.dev/class": input.workload.class}, {"mandate.dev/may-preempt": concat(",", mp) | count(mp) > 0}),
}) if {
	lib.tenant_known
	mp := object.get(model.preemption.mayPreempt, lib.effective_class, [])
}

# The class the work runs at: its tier's, or, for work of a non-preemptible
# tier that the quota rules made preemptible (beyond a guarantee), the
# tier's borrowed class, which every scheduler ranks below all guaranteed
# work (docs/model.md, "Borrowed work").
_priority_class := lib.borrowed_class(lib.effective_class) if {
	not lib.tier.preemptible
	preemption.preemptible_flag
} else := lib.effective_class

# The placement directive, only for tenants whose chain has placement
# rules: the pool and its node selector, the preferred pool, and the
# isolation level, its node label and the isolation unit.
_placement := {"placement": object.union(object.union(_confined, _preferred), _isolated)} if {
	(count(_confined) + count(_preferred)) + count(_isolated) > 0
} else := {}

_confined := {
	"pool": topology.pool,
	"rule": topology.confinement.rule,
	"nodeSelector": topology.pool_selector(topology.pool),
} if {
	topology.pool != ""
} else := {}

_preferred := {
	"preferredPool": topology.preferred_pool,
	"preferredSelector": topology.pool_selector(topology.preferred_pool),
} if {
	topology.preferred_pool
} else := {}

_isolated := {
	"isolationLevel": topology.isolation.level,
	"isolationLabel": topology.isolation.label,
	"isolationUnit": topology.isolation.unit,
} if {
	topology.isolation
} else := {}

# Topology directives only for GPU gangs the rules place.
_topology := {
	"requiredLevel": r,
	"requiredLabel": rl.label,
	"requiredTier": rl.tier,
	"preferredLevel": p,
	"preferredLabel": pl.label,
	"preferredTier": pl.tier,
	"topologyName": {true: object.get(model.topology, "name", ""), false: ""}[r != ""],
} if {
	lib.gpu_workload
	r := topology.required_level
	p := topology.preferred_or_empty
	rl := topology.level(r)
	pl := topology.level(p)
} else := {
	"requiredLevel": "",
	"requiredLabel": "",
	"requiredTier": 0,
	"preferredLevel": "",
	"preferredLabel": "",
	"preferredTier": 0,
	"topologyName": "",
}
