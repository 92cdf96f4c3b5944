package mandate.preemption_test

import data.mandate.preemption
import data.mandate.testing

test_preemptible_tier_is_preemptible if {
	preemption.preemptible with input as testing.input_for("research", {"priorityClass": "train"}) with data.mandate.model as testing.model
	not preemption.preemptible with input as testing.input_for("research", {"priorityClass": "build"}) with data.mandate.model as testing.model
}

test_work_beyond_guarantee_is_preemptible if {
	inp := object.union(
		testing.input_for("product", {"priorityClass": "build"}),
		{"usage": {"product": {"nvidia.com/gpu": {"total": 128, "nonPreemptible": 128}}}},
	)
	preemption.preemptible with input as inp with data.mandate.model as testing.model
	preemption.explain.current == "preemptible (beyond guarantee)" with input as inp with data.mandate.model as testing.model
}

test_tenant_cannot_exempt_itself if {
	inp := testing.input_for("research", _asks_non_preemptible("kai.scheduler/preemptibility=non-preemptible"))
	some v in preemption.deny with input as inp with data.mandate.model as testing.model
	v.code == "PREEMPTION_SELF_EXEMPT"
	contains(v.message, "kai.scheduler/preemptibility=non-preemptible")
	inp2 := testing.input_for("research", _asks_non_preemptible("volcano.sh/preemptable=false"))
	some v2 in preemption.deny with input as inp2 with data.mandate.model as testing.model
	v2.code == "PREEMPTION_SELF_EXEMPT"
	contains(v2.message, "volcano.sh/preemptable=false")
}

test_asking_to_be_preemptible_is_no_exemption if {
	inp := testing.input_for("research", {"requestedPreemptible": true, "requestedPreemptibleBy": "volcano.sh/preemptable=true"})
	count(preemption.deny) == 0 with input as inp with data.mandate.model as testing.model
}

_asks_non_preemptible(by) := {"requestedPreemptible": false, "requestedPreemptibleBy": by}

test_non_preemptible_work_may_say_so if {
	inp := testing.input_for("research", object.union({"priorityClass": "build"}, _asks_non_preemptible("kai.scheduler/preemptibility=non-preemptible")))
	count(preemption.deny) == 0 with input as inp with data.mandate.model as testing.model
}

test_gangs_are_preempted_whole if {
	preemption.gang_min == 4 with input as testing.input_for("research", testing.gang(4, 8)) with data.mandate.model as testing.model
	preemption.gang_min == 2 with input as testing.input_for("research", object.union(testing.gang(4, 8), {"minPods": 2})) with data.mandate.model as testing.model
	preemption.gang_min == 0 with input as testing.input_for("research", testing.gang(4, 8)) with data.mandate.model as testing.model
		with data.mandate.model.preemption.gangsWhole as false
}

test_who_may_preempt_whom if {
	preemption.may_preempt == ["train", "build-preemptible"] with input as testing.input_for("product", {"class": "inference"}) with data.mandate.model as testing.model
	preemption.may_preempt == [] with input as testing.input_for("research", {}) with data.mandate.model as testing.model
}
