package mandate_test

import data.mandate
import data.mandate.testing

test_clean_workload_is_allowed if {
	d := mandate.decision with input as testing.input_for("research-llm", testing.gang(3, 8))
		with data.mandate.cluster as testing.cluster
	d.allowed
	d.violations == []
	d.warnings == []
	explained := mandate.explanations with input as testing.input_for("research-llm", testing.gang(3, 8))
		with data.mandate.cluster as testing.cluster
	[e.dimension | some e in explained] == ["tenancy", "priority", "quota", "topology", "preemption"]
}

test_denied_workload_lists_every_violation if {
	inp := testing.input_for("research-vision", object.union(testing.gang(16, 8), {"priorityClass": "inference"}))
	d := mandate.decision with input as inp with data.mandate.cluster as testing.cluster
	not d.allowed
	{v.code | some v in d.violations} == {"PRIORITY_NOT_ALLOWED", "QUOTA_EXCEEDS_CEILING", "TOPOLOGY_NEVER_FITS"}
	{v.dimension | some v in d.violations} == {"priority", "quota", "topology"}
}

test_unknown_tenant_denied_with_tenancy_only if {
	d := mandate.decision with input as testing.input_for("nobody", {}) with data.mandate.cluster as testing.cluster
	not d.allowed
	[v.code | some v in d.violations] == ["TENANT_UNKNOWN"]
	d.directives == {}
}
