package mandate.lib_test

import data.mandate.lib
import data.mandate.testing

test_chain_walks_up_to_the_root if {
	lib.chain == ["lab-a", "lab", "org"] with input as testing.input_for("lab-a", {}) with data.mandate.model as testing.model
	lib.chain == ["org"] with input as testing.input_for("org", {}) with data.mandate.model as testing.model
	lib.tenant_known with input as testing.input_for("org", {}) with data.mandate.model as testing.model
	not lib.tenant_known with input as testing.input_for("nobody", {}) with data.mandate.model as testing.model
}

test_chain_stops_six_deep if {
	deep := {
		"t1": {"parent": ""}, "t2": {"parent": "t1"}, "t3": {"parent": "t2"}, "t4": {"parent": "t3"},
		"t5": {"parent": "t4"}, "t6": {"parent": "t5"}, "t7": {"parent": "t6"},
	}
	lib.chain == ["t6", "t5", "t4", "t3", "t2", "t1"] with input as testing.input_for("t6", {})
		with data.mandate.model as object.union(testing.model, {"tenants": deep})
	lib.chain == ["t7", "t6", "t5", "t4", "t3", "t2"] with input as testing.input_for("t7", {})
		with data.mandate.model as object.union(testing.model, {"tenants": deep})
}

test_inherited_is_the_nearest_value if {
	lib.inherited("scheduler") == "volcano" with input as testing.input_for("lab-a", {}) with data.mandate.model as testing.model
	lib.inherited("queue") == "lab-a-queue" with input as testing.input_for("lab-a", {}) with data.mandate.model as testing.model
	lib.inherited("queue") == "org" with input as testing.input_for("ops", {}) with data.mandate.model as testing.model
	not lib.inherited("scheduler") with input as testing.input_for("ops", {}) with data.mandate.model as testing.model
}

test_gang_size_is_the_elastic_minimum_else_all_pods if {
	lib.gang_size == 4 with input as testing.input_for("lab", testing.gang(4, 8)) with data.mandate.model as testing.model
	lib.gang_size == 2 with input as testing.input_for("lab", object.union(testing.gang(4, 8), {"minPods": 2}))
		with data.mandate.model as testing.model
}
