package mandate.preemption_test

import data.mandate.preemption
import data.mandate.testing

test_preemptible_tier_is_preemptible if {
	preemption.preemptible with input as testing.input_for("lab", {"priorityClass": "scavenger"}) with data.mandate.model as testing.model
	not preemption.preemptible with input as testing.input_for("lab", {"priorityClass": "standard"}) with data.mandate.model as testing.model
	preemption.explain.current == "preemptible (tier)" with input as testing.input_for("lab", {"priorityClass": "scavenger"})
		with data.mandate.model as testing.model
	preemption.explain.current == "not preemptible" with input as testing.input_for("lab", {"priorityClass": "standard"})
		with data.mandate.model as testing.model
}

_beyond_guarantee := object.union(
	testing.input_for("svc", {"priorityClass": "standard"}),
	{"usage": {"svc": {"nvidia.com/gpu": {"total": 32, "nonPreemptible": 32}}}},
)

test_work_beyond_guarantee_is_preemptible if {
	preemption.preemptible with input as _beyond_guarantee with data.mandate.model as testing.model
	preemption.explain.current == "preemptible (beyond guarantee)" with input as _beyond_guarantee with data.mandate.model as testing.model
	not preemption.preemptible with input as _beyond_guarantee with data.mandate.model as testing.model
		with data.mandate.model.quotaPolicy.overGuarantee as "deny"
}

test_tenant_cannot_exempt_itself if {
	inp := testing.input_for("lab", {"requestedPreemptible": false, "requestedPreemptibleBy": "sched.example/preemptible=never"})
	some v in preemption.deny with input as inp with data.mandate.model as testing.model
	v.code == "PREEMPTION_SELF_EXEMPT"
	v.message == "the workload sets sched.example/preemptible=never itself, but the authority model makes scavenger work of tenant lab preemptible; remove the key (only the model grants exemptions)"
	preemption.explain.verdict == "deny" with input as inp with data.mandate.model as testing.model
}

test_self_exemption_is_denied_even_unnamed if {
	some v in preemption.deny with input as testing.input_for("lab", {"requestedPreemptible": false}) with data.mandate.model as testing.model
	v.code == "PREEMPTION_SELF_EXEMPT"
	startswith(v.message, "the workload sets a non-preemptible scheduler key itself, but the authority model makes scavenger work")
}

test_work_beyond_guarantee_cannot_exempt_itself if {
	inp := object.union(_beyond_guarantee, {"workload": {"requestedPreemptible": false, "requestedPreemptibleBy": "sched.example/preemptible=never"}})
	some v in preemption.deny with input as inp with data.mandate.model as testing.model
	v.code == "PREEMPTION_SELF_EXEMPT"
	contains(v.message, "makes standard work of tenant svc preemptible")
}

test_preemptible_work_may_ask_to_be_preemptible if {
	inp := testing.input_for("lab", {"requestedPreemptible": true, "requestedPreemptibleBy": "sched.example/preemptible=always"})
	count(preemption.deny) == 0 with input as inp with data.mandate.model as testing.model
	count(preemption.deny) == 0 with input as testing.input_for("lab", {}) with data.mandate.model as testing.model
}

test_non_preemptible_work_may_say_so if {
	inp := testing.input_for("lab", {"priorityClass": "standard", "requestedPreemptible": false, "requestedPreemptibleBy": "sched.example/preemptible=never"})
	count(preemption.deny) == 0 with input as inp with data.mandate.model as testing.model
	preemption.explain.verdict == "ok" with input as inp with data.mandate.model as testing.model
}

test_gangs_are_preempted_whole if {
	preemption.gang_min == 4 with input as testing.input_for("lab", testing.gang(4, 8)) with data.mandate.model as testing.model
	preemption.gang_min == 2 with input as testing.input_for("lab", object.union(testing.gang(4, 8), {"minPods": 2}))
		with data.mandate.model as testing.model
	preemption.gang_min == 0 with input as testing.input_for("lab", testing.gang(4, 8)) with data.mandate.model as testing.model
		with data.mandate.model.preemption.gangsWhole as false
}

test_who_may_preempt_whom if {
	preemption.may_preempt == ["scavenger", "spot"] with input as testing.input_for("svc", {"class": "inference"}) with data.mandate.model as testing.model
	preemption.explain.limit == "critical may preempt: scavenger, spot" with input as testing.input_for("svc", {"class": "inference"})
		with data.mandate.model as testing.model
	preemption.may_preempt == [] with input as testing.input_for("lab", {}) with data.mandate.model as testing.model
	preemption.explain.limit == "scavenger may preempt: nothing" with input as testing.input_for("lab", {}) with data.mandate.model as testing.model
}

test_self_exemption_carries_the_key_class_and_tenant if {
	inp := testing.input_for("lab", {"requestedPreemptible": false, "requestedPreemptibleBy": "sched.example/preemptible=never"})
	some v in preemption.deny with input as inp with data.mandate.model as testing.model
	[v.code, v.key, v.class, v.tenant] == ["PREEMPTION_SELF_EXEMPT", "sched.example/preemptible=never", "scavenger", "lab"]
}
