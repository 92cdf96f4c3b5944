package mandate.priority_test

import data.mandate.lib
import data.mandate.priority
import data.mandate.testing

test_class_above_tier_is_denied if {
	some v in priority.deny with input as testing.input_for("research-vision", {"priorityClass": "build"}) with data.mandate.model as testing.model
	v.code == "PRIORITY_NOT_ALLOWED"
	v.message == "priority class build (100) is above tenant research-vision's tier; it may use: train (50), build-preemptible (75)"
}

test_allowed_class_passes if {
	count(priority.deny) == 0 with input as testing.input_for("research", {"priorityClass": "build"}) with data.mandate.model as testing.model
}

test_allowed_classes_are_inherited if {
	some v in priority.deny with input as testing.input_for("research-llm", {"priorityClass": "inference"}) with data.mandate.model as testing.model
	v.code == "PRIORITY_NOT_ALLOWED"
	count(priority.deny) == 0 with input as testing.input_for("research-llm", {"priorityClass": "build"}) with data.mandate.model as testing.model
}

test_unknown_class_is_denied if {
	some v in priority.deny with input as testing.input_for("product", {"priorityClass": "urgent"}) with data.mandate.model as testing.model
	v.code == "PRIORITY_UNKNOWN"
	contains(v.message, "inference (125)")
}

test_default_class_follows_workload_class if {
	lib.effective_class == "inference" with input as testing.input_for("product", {"class": "inference"}) with data.mandate.model as testing.model
	count(priority.deny) == 0 with input as testing.input_for("product", {"class": "inference"}) with data.mandate.model as testing.model
}

test_default_class_above_tier_is_denied if {
	some v in priority.deny with input as testing.input_for("research", {"class": "inference"}) with data.mandate.model as testing.model
	v.code == "PRIORITY_NOT_ALLOWED"
}

test_class_without_default_is_denied if {
	some v in priority.deny with input as testing.input_for("research", {"class": "exotic"}) with data.mandate.model as testing.model
	v.code == "PRIORITY_NO_DEFAULT"
	count(priority.deny) == 0 with input as testing.input_for("research", {"class": "batch"}) with data.mandate.model as testing.model
}
