package mandate_test

import data.mandate
import data.mandate.testing

test_clean_workload_is_allowed if {
	inp := testing.input_for("lab-a", testing.gang(3, 8))
	d := mandate.decision with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	d.allowed
	d.violations == []
	d.warned == []
	d.dryrun == []
	d.warnings == []
	d.directives.scheduler == "volcano"
	explained := mandate.explanations with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	[e.dimension | some e in explained] == ["tenancy", "priority", "quota", "topology", "preemption"]
	{e.verdict | some e in explained} == {"ok"}
}

# Over its tier, its ceiling and any block: every dimension that objects says
# so. Beyond its guarantee as well, which only warns.
_everything_wrong := testing.input_for("lab-b", object.union(testing.gang(16, 8), {"priorityClass": "critical"}))

test_denied_workload_lists_every_violation if {
	d := mandate.decision with input as _everything_wrong with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	not d.allowed
	testing.codes(d.violations) == {"PRIORITY_NOT_ALLOWED", "QUOTA_EXCEEDS_CEILING", "TOPOLOGY_NEVER_FITS"}
	{v.dimension | some v in d.violations} == {"priority", "quota", "topology"}
	{v.enforcement | some v in d.violations} == {"deny"}
	[w | some w in d.warnings; startswith(w, "non-preemptible work may only use guaranteed GPUs")] != []
}

test_unknown_tenant_denied_with_tenancy_only if {
	d := mandate.decision with input as testing.input_for("nobody", {}) with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	not d.allowed
	[v.code | some v in d.violations] == ["TENANT_UNKNOWN"]
	d.directives == {}
}

# Staged enforcement: the same workload (a class above its tenant's tiers)
# under each action of PRIORITY_NOT_ALLOWED.
_above_tier := testing.input_for("lab-b", {"priorityClass": "standard"})

test_deny_stage_denies if {
	d := mandate.decision with input as _above_tier with data.mandate.cluster as testing.cluster
		with data.mandate.model as testing.staged({"PRIORITY_NOT_ALLOWED": "deny"})
	not d.allowed
	[[v.code, v.enforcement] | some v in d.violations] == [["PRIORITY_NOT_ALLOWED", "deny"]]
	d.warned == []
	d.dryrun == []
	d.warnings == []
}

test_warn_stage_admits_with_the_warning if {
	d := mandate.decision with input as _above_tier with data.mandate.cluster as testing.cluster
		with data.mandate.model as testing.staged({"PRIORITY_NOT_ALLOWED": "warn"})
	d.allowed
	d.violations == []
	[[v.code, v.enforcement] | some v in d.warned] == [["PRIORITY_NOT_ALLOWED", "warn"]]
	d.dryrun == []
	d.warnings == [concat(": ", ["PRIORITY_NOT_ALLOWED", d.warned[0].message])]
	d.directives.priorityClass == "standard"
}

test_dryrun_stage_admits_silently if {
	d := mandate.decision with input as _above_tier with data.mandate.cluster as testing.cluster
		with data.mandate.model as testing.staged({"PRIORITY_NOT_ALLOWED": "dryrun"})
	d.allowed
	d.violations == []
	d.warned == []
	[[v.code, v.enforcement] | some v in d.dryrun] == [["PRIORITY_NOT_ALLOWED", "dryrun"]]
	d.warnings == []
}

test_dimension_stage_leaves_other_dimensions_denying if {
	d := mandate.decision with input as _everything_wrong with data.mandate.cluster as testing.cluster
		with data.mandate.model as testing.staged({"quota": "warn", "topology": "dryrun", "TOPOLOGY_NEVER_FITS": "warn"})
	not d.allowed
	[v.code | some v in d.violations] == ["PRIORITY_NOT_ALLOWED"]
	testing.codes(d.warned) == {"QUOTA_EXCEEDS_CEILING", "TOPOLOGY_NEVER_FITS"}
	d.dryrun == []
}

test_unknown_stage_denies_and_warns_about_the_entry if {
	d := mandate.decision with input as _above_tier with data.mandate.cluster as testing.cluster
		with data.mandate.model as testing.staged({"priority": "dryrun", "PRIORITY_NOT_ALLOWED": "Warn"})
	not d.allowed
	[[v.code, v.enforcement] | some v in d.violations] == [["PRIORITY_NOT_ALLOWED", "deny"]]
	[w | some w in d.warnings; contains(w, `enforcement "Warn" of "PRIORITY_NOT_ALLOWED"`)] != []
}

test_explanation_verdict_follows_the_stage if {
	verdicts := {stage: v |
		some stage in ["deny", "warn", "dryrun"]
		explained := mandate.explanations with input as _above_tier with data.mandate.cluster as testing.cluster
			with data.mandate.model as testing.staged({"PRIORITY_NOT_ALLOWED": stage})
		some e in explained
		e.dimension == "priority"
		v := e.verdict
	}
	verdicts == {"deny": "deny", "warn": "warn", "dryrun": "dryrun"}
}

# The decision carries the quota limits it relied on, for the commit.
test_decision_exports_relied_limits if {
	inp := testing.input_for("lab-a", testing.gang(3, 8))
	d := mandate.decision with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	[[r.tenant, r.busy, r.overGuarantee] | some r in d.relied] == [["lab-a", false, true], ["lab", false, false], ["org", false, false]]
}

# Reasons: every warn-set warning as data, with the text it is shown as
# among warnings; the warnings are exactly those texts and the staged ones.
test_reasons_are_the_warnings_as_data if {
	inp := object.union(
		testing.input_for("lab-b", object.union(testing.gang(2, 8), {"schedulerKeys": [{"key": "spec.queue", "asks": "queue", "value": "default"}]})),
		{"usage": {"lab": {"nvidia.com/gpu": {"total": 70, "nonPreemptible": 0}}}},
	)
	d := mandate.decision with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	d.allowed
	{r.code | some r in d.reasons} == {"QUOTA_CEILING_BUSY", "SCHEDULER_KEY_OVERRIDDEN"}
	sort([r.warning | some r in d.reasons]) == d.warnings
	some busy in d.reasons
	busy.code == "QUOTA_CEILING_BUSY"
	busy.warning == busy.message
	[busy.tenant, busy.limit, busy.current, busy.needs] == ["lab", 80, 70, 16]
	some o in d.reasons
	o.code == "SCHEDULER_KEY_OVERRIDDEN"
	o.warning == concat(": ", [o.code, o.message])
	[o.key, o.asked] == ["spec.queue", "default"]
}

test_violations_carry_their_facts if {
	d := mandate.decision with input as _everything_wrong with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	some v in d.violations
	v.code == "QUOTA_EXCEEDS_CEILING"
	[v.tenant, v.limit, v.needs, v.enforcement] == ["lab-b", 32, 128, "deny"]
}
