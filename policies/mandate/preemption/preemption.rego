# METADATA
# title: Preemption rules
# description: |
#   Which work may be preempted: preemptible tiers always, and work the quota
#   rules turned preemptible because it goes beyond a guarantee. Tenants
#   cannot exempt themselves with scheduler keys of their own (which the Go
#   normaliser reports as input.workload.requestedPreemptible); gangs are
#   preempted whole; each tier may preempt only the tiers the model lists.
package mandate.preemption

import data.mandate.lib
import data.mandate.model
import data.mandate.quota

preemptible if preemptible_flag

# preemptible_flag is preemptible as a boolean, computed once per decision.
preemptible_flag if {
	lib.tier.preemptible
} else if {
	quota.over_guarantee
	model.quotaPolicy.overGuarantee == "preemptible"
} else := false

# The tiers this workload's tier may preempt.
may_preempt := object.get(model.preemption.mayPreempt, lib.effective_class, [])

# A workload may ask its scheduler, through the scheduler's own key on the
# submitted object, not to be preempted. The Go normaliser reads those keys,
# so Rego knows no scheduler's key names: input.workload.requestedPreemptible
# is present only when the workload asks for a preemptibility itself (false:
# it asks to be non-preemptible), and input.workload.requestedPreemptibleBy
# names the key and value it set ("<key>=<value>"). Only the model grants
# exemptions.
deny contains v if {
	preemptible_flag
	input.workload.requestedPreemptible == false
	facts := {"key": _requested_by, "class": lib.effective_class, "tenant": lib.tenant}
	v := lib.reason("PREEMPTION_SELF_EXEMPT", "preemption", facts, sprintf(
		"the workload sets %s itself, but the authority model makes %s work of tenant %s preemptible; remove the key (only the model grants exemptions)",
		[_requested_by, lib.effective_class, lib.tenant],
	))
}

# _requested_by is the key=value by which the workload asked not to be
# preempted; a description when the normaliser did not name it, so the
# denial never depends on the name.
_requested_by := by if {
	by := input.workload.requestedPreemptibleBy
	is_string(by)
	by != ""
} else := "a non-preemptible scheduler key"

# Gangs are preempted whole: the scheduler sees one gang of this many pods.
gang_min := lib.gang_size if {
	model.preemption.gangsWhole
} else := 0 if {
	not model.preemption.gangsWhole
}

explain := {
	"dimension": "preemption",
	"verdict": lib.verdict(deny, set()),
	"limit": sprintf("%s may preempt: %s", [lib.effective_class, _may_preempt_text]),
	"current": _state,
} if {
	lib.tenant_known
	lib.tier
}

_may_preempt_text := concat(", ", may_preempt) if {
	count(may_preempt) > 0
} else := "nothing"

_state := "preemptible (tier)" if {
	lib.tier.preemptible
} else := "preemptible (beyond guarantee)" if {
	preemptible_flag
} else := "not preemptible"
