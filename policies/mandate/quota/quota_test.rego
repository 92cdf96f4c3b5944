package mandate.quota_test

import data.mandate.quota
import data.mandate.testing

_usage(tenant, total, np) := {tenant: {"nvidia.com/gpu": {"total": total, "nonPreemptible": np}}}

test_workload_above_ceiling_is_denied if {
	inp := testing.input_for("research-vision", testing.gang(16, 8))
	some v in quota.deny with input as inp with data.mandate.model as testing.model
	v.code == "QUOTA_EXCEEDS_CEILING"
	v.message == "the workload needs 128 nvidia.com/gpu but tenant research-vision's ceiling is 64, so it could never run; ask for at most 64 or have the ceiling of research-vision raised"
}

test_workload_at_ceiling_passes if {
	count(quota.deny) == 0 with input as testing.input_for("research-vision", testing.gang(8, 8)) with data.mandate.model as testing.model
}

test_parent_ceiling_caps_child if {
	inp := object.union(testing.input_for("research-vision", testing.gang(4, 8)), {"usage": _usage("research", 300, 0)})
	some v in quota.warn with input as inp with data.mandate.model as testing.model
	v.code == "QUOTA_CEILING_BUSY"
	contains(v.message, "tenant research uses 300 of its 320 nvidia.com/gpu ceiling")
	contains(v.message, "until 12 more are released")
}

test_room_under_every_ceiling_passes if {
	inp := object.union(testing.input_for("research-vision", testing.gang(4, 8)), {"usage": _usage("research", 200, 0)})
	count(quota.warn) == 0 with input as inp with data.mandate.model as testing.model
}

test_resource_without_quota_is_denied if {
	inp := testing.input_for("research-vision", {"gpuResource": "nvidia.com/mig-2g.20gb", "gpusPerPod": 1, "totalGPUs": 1})
	some v in quota.deny with input as inp with data.mandate.model as testing.model
	v.code == "QUOTA_NO_RESOURCE"
}

test_resource_quota_is_inherited_from_parent if {
	inp := testing.input_for("platform", {"gpuResource": "nvidia.com/mig-1g.10gb", "gpusPerPod": 1, "totalGPUs": 1})
	count(quota.deny) == 0 with input as inp with data.mandate.model as testing.model
}

test_non_preemptible_beyond_guarantee_turns_preemptible if {
	inp := object.union(
		testing.input_for("product", object.union(testing.gang(2, 8), {"priorityClass": "build"})),
		{"usage": _usage("product", 120, 120)},
	)
	quota.over_guarantee with input as inp with data.mandate.model as testing.model
	some v in quota.warn with input as inp with data.mandate.model as testing.model
	v.code == "QUOTA_TURNED_PREEMPTIBLE"
	contains(v.message, "tenant product has 120 of 128 guaranteed nvidia.com/gpu in non-preemptible use and this workload needs 16 more")
}

test_non_preemptible_within_guarantee_stays if {
	inp := object.union(
		testing.input_for("product", object.union(testing.gang(1, 8), {"priorityClass": "build"})),
		{"usage": _usage("product", 120, 120)},
	)
	not quota.over_guarantee with input as inp with data.mandate.model as testing.model
}

test_preemptible_work_may_exceed_guarantee if {
	inp := object.union(testing.input_for("product", testing.gang(2, 8)), {"usage": _usage("product", 120, 120)})
	not quota.over_guarantee with input as inp with data.mandate.model as testing.model
}

test_over_guarantee_denied_when_model_says_so if {
	inp := object.union(
		testing.input_for("product", object.union(testing.gang(2, 8), {"priorityClass": "build"})),
		{"usage": _usage("product", 120, 120)},
	)
	some v in quota.deny with input as inp with data.mandate.model as testing.model
		with data.mandate.model.quotaPolicy.overGuarantee as "deny"
	v.code == "QUOTA_OVER_GUARANTEE"
	contains(v.message, "use a preemptible class (train (50), build-preemptible (75))")
}

test_cpu_only_workload_has_no_quota_verdict if {
	inp := testing.input_for("research", {"gpusPerPod": 0, "totalGPUs": 0, "gpuResource": ""})
	count(quota.deny) == 0 with input as inp with data.mandate.model as testing.model
	quota.explain.current == "no GPUs requested" with input as inp with data.mandate.model as testing.model
}
