package mandate_test

import data.mandate
import data.mandate.testing

test_clean_workload_is_allowed if {
	d := mandate.decision with input as testing.input_for("research-llm", testing.gang(3, 8)) with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	d.allowed
	d.violations == []
	d.warnings == []
	explained := mandate.explanations with input as testing.input_for("research-llm", testing.gang(3, 8)) with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	[e.dimension | some e in explained] == ["tenancy", "priority", "quota", "topology", "preemption"]
}

test_denied_workload_lists_every_violation if {
	inp := testing.input_for("research-vision", object.union(testing.gang(16, 8), {"priorityClass": "inference"}))
	d := mandate.decision with input as inp with data.mandate.cluster as testing.cluster with data.mandate.model as testing.model
	not d.allowed
	{v.code | some v in d.violations} == {"PRIORITY_NOT_ALLOWED", "QUOTA_EXCEEDS_CEILING", "TOPOLOGY_NEVER_FITS"}
	{v.dimension | some v in d.violations} == {"priority", "quota", "topology"}
}

test_unknown_tenant_denied_with_tenancy_only if {
	d := mandate.decision with input as testing.input_for("nobody", {}) with data.mandate.cluster as testing.cluster with data.mandate.model as testing.model
	not d.allowed
	[v.code | some v in d.violations] == ["TENANT_UNKNOWN"]
	d.directives == {}
}

# Staged enforcement: the same workload (a class above its tenant's tiers)
# under each action of PRIORITY_NOT_ALLOWED.
_above_tier := testing.input_for("research-vision", {"priorityClass": "build"})

test_deny_stage_denies if {
	d := mandate.decision with input as _above_tier with data.mandate.cluster as testing.cluster with data.mandate.model as testing.model
		with data.mandate.model.enforcement as {"PRIORITY_NOT_ALLOWED": "deny"}
	not d.allowed
	[[v.code, v.enforcement] | some v in d.violations] == [["PRIORITY_NOT_ALLOWED", "deny"]]
	d.warned == []
	d.dryrun == []
	d.warnings == []
}

test_warn_stage_admits_with_the_warning if {
	d := mandate.decision with input as _above_tier with data.mandate.cluster as testing.cluster with data.mandate.model as testing.model
		with data.mandate.model.enforcement as {"PRIORITY_NOT_ALLOWED": "warn"}
	d.allowed
	d.violations == []
	[[v.code, v.enforcement] | some v in d.warned] == [["PRIORITY_NOT_ALLOWED", "warn"]]
	d.dryrun == []
	d.warnings == [concat(": ", ["PRIORITY_NOT_ALLOWED", d.warned[0].message])]
	d.directives.priorityClass == "build"
}

test_dryrun_stage_admits_silently if {
	d := mandate.decision with input as _above_tier with data.mandate.cluster as testing.cluster with data.mandate.model as testing.model
		with data.mandate.model.enforcement as {"PRIORITY_NOT_ALLOWED": "dryrun"}
	d.allowed
	d.violations == []
	d.warned == []
	[[v.code, v.enforcement] | some v in d.dryrun] == [["PRIORITY_NOT_ALLOWED", "dryrun"]]
	d.warnings == []
}

test_dimension_stage_leaves_other_dimensions_denying if {
	inp := testing.input_for("research-vision", object.union(testing.gang(16, 8), {"priorityClass": "inference"}))
	d := mandate.decision with input as inp with data.mandate.cluster as testing.cluster with data.mandate.model as testing.model
		with data.mandate.model.enforcement as {"quota": "warn", "topology": "dryrun", "TOPOLOGY_NEVER_FITS": "warn"}
	not d.allowed
	[v.code | some v in d.violations] == ["PRIORITY_NOT_ALLOWED"]
	{v.code | some v in d.warned} == {"QUOTA_EXCEEDS_CEILING", "TOPOLOGY_NEVER_FITS"}
	d.dryrun == []
}

test_unknown_stage_denies_and_warns_about_the_entry if {
	d := mandate.decision with input as _above_tier with data.mandate.cluster as testing.cluster with data.mandate.model as testing.model
		with data.mandate.model.enforcement as {"priority": "dryrun", "PRIORITY_NOT_ALLOWED": "Warn"}
	not d.allowed
	[[v.code, v.enforcement] | some v in d.violations] == [["PRIORITY_NOT_ALLOWED", "deny"]]
	[w | some w in d.warnings; contains(w, `enforcement "Warn" of "PRIORITY_NOT_ALLOWED"`)] != []
}

test_explanation_verdict_follows_the_stage if {
	verdicts := {stage: v |
		some stage in ["deny", "warn", "dryrun"]
		explained := mandate.explanations with input as _above_tier with data.mandate.cluster as testing.cluster with data.mandate.model as testing.model
			with data.mandate.model.enforcement as {"PRIORITY_NOT_ALLOWED": stage}
		some e in explained
		e.dimension == "priority"
		v := e.verdict
	}
	verdicts == {"deny": "deny", "warn": "warn", "dryrun": "dryrun"}
}
