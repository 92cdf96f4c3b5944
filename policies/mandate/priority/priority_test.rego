package mandate.priority_test

import data.mandate.lib
import data.mandate.priority
import data.mandate.testing

test_class_above_tier_is_denied if {
	inp := testing.input_for("lab-b", {"priorityClass": "standard"})
	some v in priority.deny with input as inp with data.mandate.model as testing.model
	v.code == "PRIORITY_NOT_ALLOWED"
	v.message == "priority class standard (30) is above tenant lab-b's tier; it may use: scavenger (10), spot (20)"
	e := priority.explain with input as inp with data.mandate.model as testing.model
	e.verdict == "deny"
	e.limit == "allowed: scavenger (10), spot (20)"
	e.current == "standard (requested)"
}

test_allowed_class_passes if {
	count(priority.deny) == 0 with input as testing.input_for("lab", {"priorityClass": "standard"}) with data.mandate.model as testing.model
	priority.explain.verdict == "ok" with input as testing.input_for("lab", {"priorityClass": "standard"}) with data.mandate.model as testing.model
}

test_allowed_classes_are_inherited if {
	some v in priority.deny with input as testing.input_for("lab-a", {"priorityClass": "critical"}) with data.mandate.model as testing.model
	v.code == "PRIORITY_NOT_ALLOWED"
	count(priority.deny) == 0 with input as testing.input_for("lab-a", {"priorityClass": "standard"}) with data.mandate.model as testing.model
}

test_unknown_class_is_denied if {
	some v in priority.deny with input as testing.input_for("svc", {"priorityClass": "urgent"}) with data.mandate.model as testing.model
	v.code == "PRIORITY_UNKNOWN"
	v.message == `priority class "urgent" is not a tier of the authority model; tenant svc may use: scavenger (10), spot (20), standard (30), critical (40)`
}

test_default_class_follows_workload_class if {
	lib.effective_class == "critical" with input as testing.input_for("svc", {"class": "inference"}) with data.mandate.model as testing.model
	count(priority.deny) == 0 with input as testing.input_for("svc", {"class": "inference"}) with data.mandate.model as testing.model
	priority.explain.current == "critical (default for inference)" with input as testing.input_for("svc", {"class": "inference"})
		with data.mandate.model as testing.model
}

test_default_class_above_tier_is_denied if {
	some v in priority.deny with input as testing.input_for("lab", {"class": "inference"}) with data.mandate.model as testing.model
	v.code == "PRIORITY_NOT_ALLOWED"
	contains(v.message, "priority class critical (40) is above tenant lab's tier")
}

test_class_without_default_is_denied if {
	some v in priority.deny with input as testing.input_for("lab", {"class": "exotic"}) with data.mandate.model as testing.model
	v.code == "PRIORITY_NO_DEFAULT"
	v.message == `workload class "exotic" has no default priority class in the authority model; set spec.priorityClassName to one of: scavenger (10), spot (20), standard (30)`
	count(priority.deny) == 0 with input as testing.input_for("lab", {"class": "batch"}) with data.mandate.model as testing.model
}

test_unknown_tenant_has_no_priority_verdict if {
	count(priority.deny) == 0 with input as testing.input_for("nobody", {"priorityClass": "urgent"}) with data.mandate.model as testing.model
	not priority.explain with input as testing.input_for("nobody", {}) with data.mandate.model as testing.model
}

test_priority_violation_carries_the_class_and_the_allowed_ones if {
	some v in priority.deny with input as testing.input_for("lab-b", {"priorityClass": "standard"}) with data.mandate.model as testing.model
	[v.code, v.tenant, v.class, v.classes] == ["PRIORITY_NOT_ALLOWED", "lab-b", "standard", ["scavenger", "spot"]]
}
