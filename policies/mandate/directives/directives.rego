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

directives := {
	"scheduler": _scheduler,
	"queue": _queue,
	"priorityClass": lib.effective_class,
	"preemptible": _preemptible,
	"gangMin": preemption.gang_min,
	"requiredLevel": _required,
	"requiredLabel": _required_level.label,
	"requiredTier": _required_level.tier,
	"preferredLevel": _preferred,
	"preferredLabel": _preferred_level.label,
	"preferredTier": _preferred_level.tier,
	"topologyName": _topology_name,
	"labels": {"mandate.dev/tenant": lib.tenant},
	"annotations": _annotations,
} if lib.tenant_known

_scheduler := s if {
	s := lib.inherited("scheduler")
} else := "default"

# Each tenant has its own queue; a tenant without one uses its name.
_queue := q if {
	q := model.tenants[lib.tenant].queue
} else := lib.tenant

_preemptible if preemption.preemptible

else := false

# Topology directives only for GPU gangs the rules place.
_required := l if {
	lib.gpu_workload
	l := topology.required_level
} else := ""

_preferred := l if {
	lib.gpu_workload
	l := topology.preferred_level
} else := ""

_no_level := {"label": "", "tier": 0}

_required_level := object.get(topology.levels, _required, _no_level)

_preferred_level := object.get(topology.levels, _preferred, _no_level)

_topology_name := n if {
	_required != ""
	n := model.topology.name
} else := ""

# Annotations for people reading the object; empty values are left out.
_annotations := object.union({"mandate.dev/class": lib.workload.class}, _may_preempt)

_may_preempt := {"mandate.dev/may-preempt": concat(",", preemption.may_preempt)} if {
	count(preemption.may_preempt) > 0
} else := {}
