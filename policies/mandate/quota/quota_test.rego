package mandate.quota_test

import data.mandate.quota
import data.mandate.testing

_usage(tenant, total, np) := {tenant: {"nvidia.com/gpu": {"total": total, "nonPreemptible": np}}}

test_workload_above_ceiling_is_denied if {
	inp := testing.input_for("lab-b", testing.gang(8, 8))
	some v in quota.deny with input as inp with data.mandate.model as testing.model
	v.code == "QUOTA_EXCEEDS_CEILING"
	v.message == "the workload needs 64 nvidia.com/gpu but tenant lab-b's ceiling is 32, so it could never run; ask for at most 32 or have the ceiling of lab-b raised"
	e := quota.explain with input as inp with data.mandate.model as testing.model
	e.verdict == "deny"
	e.limit == "tenant lab-b: guaranteed 8, ceiling 32 nvidia.com/gpu"
	e.current == "0 in use (0 non-preemptible) + 64 requested"
}

test_workload_at_ceiling_passes if {
	inp := testing.input_for("lab-b", testing.gang(4, 8))
	count(quota.deny) == 0 with input as inp with data.mandate.model as testing.model
	quota.explain.verdict == "ok" with input as inp with data.mandate.model as testing.model
}

test_parent_ceiling_caps_child if {
	inp := object.union(testing.input_for("lab-b", testing.gang(2, 8)), {"usage": _usage("lab", 70, 0)})
	some v in quota.warn with input as inp with data.mandate.model as testing.model
	v.code == "QUOTA_CEILING_BUSY"
	v.message == "tenant lab uses 70 of its 80 nvidia.com/gpu ceiling; this workload needs 16 and waits in the queue until 6 more are released"
	count(quota.deny) == 0 with input as inp with data.mandate.model as testing.model
	e := quota.explain with input as inp with data.mandate.model as testing.model
	e.verdict == "warn"
	e.limit == "tenant lab: guaranteed 32, ceiling 80 nvidia.com/gpu"
}

test_room_under_every_ceiling_passes if {
	inp := object.union(testing.input_for("lab-b", testing.gang(2, 8)), {"usage": _usage("lab", 64, 0)})
	count(quota.warn) == 0 with input as inp with data.mandate.model as testing.model
	quota.explain.limit == "tenant lab-b: guaranteed 8, ceiling 32 nvidia.com/gpu" with input as inp with data.mandate.model as testing.model
}

test_resource_without_quota_is_denied if {
	inp := testing.input_for("lab-b", {"gpuResource": "nvidia.com/mig-2g.20gb", "gpusPerPod": 1, "totalGPUs": 1})
	some v in quota.deny with input as inp with data.mandate.model as testing.model
	v.code == "QUOTA_NO_RESOURCE"
	v.message == `tenant lab-b has no quota for nvidia.com/mig-2g.20gb (neither it nor its parents ["lab", "org"]); ask for a quota or request a GPU resource it has`
}

test_resource_quota_is_inherited_from_parent if {
	inp := testing.input_for("ops", {"gpuResource": "nvidia.com/mig-1g.10gb", "gpusPerPod": 1, "totalGPUs": 1})
	count(quota.deny) == 0 with input as inp with data.mandate.model as testing.model
	quota.explain.limit == "tenant org: guaranteed 8, ceiling 8 nvidia.com/mig-1g.10gb" with input as inp with data.mandate.model as testing.model
}

test_non_preemptible_beyond_guarantee_turns_preemptible if {
	inp := object.union(
		testing.input_for("svc", object.union(testing.gang(2, 8), {"priorityClass": "standard"})),
		{"usage": _usage("svc", 24, 24)},
	)
	quota.over_guarantee with input as inp with data.mandate.model as testing.model
	some v in quota.warn with input as inp with data.mandate.model as testing.model
	v.code == "QUOTA_TURNED_PREEMPTIBLE"
	v.message == "non-preemptible work may only use guaranteed GPUs: tenant svc has 24 of 32 guaranteed nvidia.com/gpu in non-preemptible use and this workload needs 16 more, so it runs preemptible: it may be stopped when guaranteed work needs the GPUs"
	count(quota.deny) == 0 with input as inp with data.mandate.model as testing.model
	e := quota.explain with input as inp with data.mandate.model as testing.model
	e.verdict == "warn"
	e.current == "24 in use (24 non-preemptible) + 16 requested"
}

test_non_preemptible_within_guarantee_stays if {
	inp := object.union(
		testing.input_for("svc", object.union(testing.gang(1, 8), {"priorityClass": "standard"})),
		{"usage": _usage("svc", 24, 24)},
	)
	not quota.over_guarantee with input as inp with data.mandate.model as testing.model
	count(quota.warn) == 0 with input as inp with data.mandate.model as testing.model
}

test_preemptible_work_may_exceed_guarantee if {
	inp := object.union(testing.input_for("svc", testing.gang(2, 8)), {"usage": _usage("svc", 24, 24)})
	not quota.over_guarantee with input as inp with data.mandate.model as testing.model
}

test_over_guarantee_denied_when_model_says_so if {
	inp := object.union(
		testing.input_for("svc", object.union(testing.gang(2, 8), {"priorityClass": "standard"})),
		{"usage": _usage("svc", 24, 24)},
	)
	some v in quota.deny with input as inp with data.mandate.model as testing.model
		with data.mandate.model.quotaPolicy.overGuarantee as "deny"
	v.code == "QUOTA_OVER_GUARANTEE"
	v.message == "non-preemptible work may only use guaranteed GPUs: tenant svc has 24 of 32 guaranteed nvidia.com/gpu in non-preemptible use and this workload needs 16 more; use a preemptible class (scavenger (10), spot (20))"
	count(quota.warn) == 0 with input as inp with data.mandate.model as testing.model
		with data.mandate.model.quotaPolicy.overGuarantee as "deny"
}

test_cpu_only_workload_has_no_quota_verdict if {
	inp := testing.input_for("lab", {"gpusPerPod": 0, "totalGPUs": 0, "gpuResource": ""})
	count(quota.deny) == 0 with input as inp with data.mandate.model as testing.model
	quota.explain.current == "no GPUs requested" with input as inp with data.mandate.model as testing.model
}

# Quota per GPU product: svc guarantees 16 H100 and 8 B200 of its 32
# nvidia.com/gpu.

_h100 := "NVIDIA-H100-80GB-HBM3"

_b200 := "NVIDIA-B200"

_product_job(gpus, product) := object.union(testing.gang(1, gpus), {"priorityClass": "standard", "gpuProduct": product})

# svc runs 8 H100 and 8 B200 GPUs, all non-preemptible.
_svc_usage := {"svc": {
	"nvidia.com/gpu": {"total": 16, "nonPreemptible": 16},
	"nvidia.com/gpu@NVIDIA-H100-80GB-HBM3": {"total": 8, "nonPreemptible": 8},
	"nvidia.com/gpu@NVIDIA-B200": {"total": 8, "nonPreemptible": 8},
}}

_svc_input(gpus, product) := object.union(testing.input_for("svc", _product_job(gpus, product)), {"usage": _svc_usage})

test_each_product_is_counted_against_its_own_guarantee if {
	# 8 more H100 fill H100's guarantee; B200's is full already, though the
	# resource's 32 has room for both: separate quotas.
	not quota.over_guarantee with input as _svc_input(8, _h100) with data.mandate.model as testing.model
	quota.over_guarantee with input as _svc_input(1, _b200) with data.mandate.model as testing.model
	not quota.over_guarantee with input as _svc_input(16, "") with data.mandate.model as testing.model
}

test_beyond_a_products_guarantee_turns_preemptible if {
	inp := _svc_input(16, _h100)
	quota.over_guarantee with input as inp with data.mandate.model as testing.model
	some v in quota.warn with input as inp with data.mandate.model as testing.model
	v.code == "QUOTA_TURNED_PREEMPTIBLE"
	v.message == "non-preemptible work may only use guaranteed GPUs: tenant svc has 8 of 16 guaranteed NVIDIA-H100-80GB-HBM3 nvidia.com/gpu in non-preemptible use and this workload needs 16 more, so it runs preemptible: it may be stopped when guaranteed work needs the GPUs"
	e := quota.explain with input as inp with data.mandate.model as testing.model
	e.limit == "tenant svc: guaranteed 16, ceiling 24 NVIDIA-H100-80GB-HBM3 nvidia.com/gpu"
	e.current == "8 in use (8 non-preemptible) + 16 requested; by product: NVIDIA-B200 8 (8 non-preemptible), NVIDIA-H100-80GB-HBM3 8 (8 non-preemptible)"
}

test_beyond_a_products_guarantee_is_denied_when_the_model_says_so if {
	m := json.patch(testing.model, [{"op": "replace", "path": "/quotaPolicy/overGuarantee", "value": "deny"}])
	some v in quota.deny with input as _svc_input(16, _h100) with data.mandate.model as m
	v.code == "QUOTA_OVER_GUARANTEE"
	count(quota.deny) == 0 with input as _svc_input(8, _b200) with data.mandate.model as m with input.usage as {}
}

test_a_products_ceiling_caps_its_work if {
	some v in quota.deny with input as testing.input_for("svc", _product_job(32, _b200)) with data.mandate.model as testing.model
	v.code == "QUOTA_EXCEEDS_CEILING"
	v.message == "the workload needs 32 NVIDIA-B200 nvidia.com/gpu but tenant svc's ceiling is 16, so it could never run; ask for at most 16 or have the ceiling of svc raised"

	# 32 of no product in particular fit the resource's ceiling of 40.
	count(quota.deny) == 0 with input as testing.input_for("svc", _product_job(32, "")) with data.mandate.model as testing.model
}

test_a_products_ceiling_busy_waits if {
	inp := _svc_input(12, _b200)
	some v in quota.warn with input as inp with data.mandate.model as testing.model
	v.code == "QUOTA_CEILING_BUSY"
	v.message == "tenant svc uses 8 of its 16 NVIDIA-B200 nvidia.com/gpu ceiling; this workload needs 12 and waits in the queue until 4 more are released"
}

test_product_work_counts_against_the_resource_too if {
	# The resource covers every product: 24 H100 fit H100's ceiling (24)
	# but not what is left of the resource's 40.
	usage := {"svc": {"nvidia.com/gpu": {"total": 30, "nonPreemptible": 0}}}
	inp := object.union(testing.input_for("svc", _product_job(24, _h100)), {"usage": usage})
	some v in quota.warn with input as inp with data.mandate.model as testing.model
	v.code == "QUOTA_CEILING_BUSY"
	v.message == "tenant svc uses 30 of its 40 nvidia.com/gpu ceiling; this workload needs 24 and waits in the queue until 14 more are released"
}

test_a_product_without_its_own_quota_has_the_resources if {
	# A100 is not among svc's products: the resource's quota is all.
	inp := _svc_input(16, "NVIDIA-A100-SXM4-80GB")
	not quota.over_guarantee with input as inp with data.mandate.model as testing.model
	quota.explain.limit == "tenant svc: guaranteed 32, ceiling 40 nvidia.com/gpu" with input as inp with data.mandate.model as testing.model
}

test_tenants_without_product_quotas_ignore_the_product if {
	inp := testing.input_for("lab-b", _product_job(8, _h100))
	quota.explain.limit == "tenant lab-b: guaranteed 8, ceiling 32 nvidia.com/gpu" with input as inp with data.mandate.model as testing.model
}

# relied: the limits the decision read usage of, nearest tenant first, with
# what it saw and the outcomes it took from them, for the commit's re-check.

test_relied_lists_every_limit_of_the_chain_with_its_outcomes if {
	inp := object.union(testing.input_for("lab-b", testing.gang(2, 8)), {"usage": _usage("lab", 70, 0)})
	quota.relied == [
		{"tenant": "lab-b", "usage": "nvidia.com/gpu", "ceiling": 32, "guaranteed": 8, "demand": 16, "seen": {"total": 0, "nonPreemptible": 0}, "busy": false, "overGuarantee": true},
		{"tenant": "lab", "usage": "nvidia.com/gpu", "ceiling": 80, "guaranteed": 32, "demand": 16, "seen": {"total": 70, "nonPreemptible": 0}, "busy": true, "overGuarantee": false},
		{"tenant": "org", "usage": "nvidia.com/gpu", "ceiling": 96, "guaranteed": 64, "demand": 16, "seen": {"total": 0, "nonPreemptible": 0}, "busy": false, "overGuarantee": false},
	] with input as inp with data.mandate.model as testing.model
}

test_relied_names_the_product_limit_before_the_resource if {
	relied := quota.relied with input as _svc_input(8, _h100) with data.mandate.model as testing.model
	[[r.tenant, r.usage, r.overGuarantee] | some r in relied] == [
		["svc", "nvidia.com/gpu@NVIDIA-H100-80GB-HBM3", false],
		["svc", "nvidia.com/gpu", false],
		["org", "nvidia.com/gpu", false],
	]
	relied[0].seen == {"total": 8, "nonPreemptible": 8}
	relied[0].guaranteed == 16
}

test_relied_is_empty_without_gpus if {
	inp := testing.input_for("lab", {"gpusPerPod": 0, "totalGPUs": 0, "gpuResource": ""})
	quota.relied == [] with input as inp with data.mandate.model as testing.model
}

# Reasons as data: every quota violation and warning carries the facts its
# message is rendered from, so no reader parses the text.

test_busy_ceiling_carries_its_facts if {
	inp := object.union(testing.input_for("lab-b", testing.gang(2, 8)), {"usage": _usage("lab", 70, 0)})
	some v in quota.warn with input as inp with data.mandate.model as testing.model
	object.filter(v, {"code", "dimension", "tenant", "resource", "product", "limit", "current", "needs"}) == {
		"code": "QUOTA_CEILING_BUSY", "dimension": "quota",
		"tenant": "lab", "resource": "nvidia.com/gpu", "product": "",
		"limit": 80, "current": 70, "needs": 16,
	}
}

test_a_products_busy_ceiling_names_the_product if {
	some v in quota.warn with input as _svc_input(12, _b200) with data.mandate.model as testing.model
	v.code == "QUOTA_CEILING_BUSY"
	[v.tenant, v.resource, v.product, v.limit, v.current, v.needs] == ["svc", "nvidia.com/gpu", _b200, 16, 8, 12]
}

test_exceeded_ceiling_carries_its_facts if {
	some v in quota.deny with input as testing.input_for("lab-b", testing.gang(8, 8)) with data.mandate.model as testing.model
	v.code == "QUOTA_EXCEEDS_CEILING"
	[v.tenant, v.resource, v.product, v.limit, v.current, v.needs] == ["lab-b", "nvidia.com/gpu", "", 32, 0, 64]
}

test_missing_quota_names_tenant_and_resource if {
	inp := testing.input_for("lab-b", {"gpuResource": "nvidia.com/mig-2g.20gb", "gpusPerPod": 1, "totalGPUs": 1})
	some v in quota.deny with input as inp with data.mandate.model as testing.model
	[v.code, v.tenant, v.resource, v.needs] == ["QUOTA_NO_RESOURCE", "lab-b", "nvidia.com/mig-2g.20gb", 1]
}

test_over_guarantee_carries_the_guarantee_and_the_preemptible_classes if {
	m := json.patch(testing.model, [{"op": "replace", "path": "/quotaPolicy/overGuarantee", "value": "deny"}])
	some v in quota.deny with input as _svc_input(16, _h100) with data.mandate.model as m
	v.code == "QUOTA_OVER_GUARANTEE"
	[v.tenant, v.product, v.limit, v.current, v.needs] == ["svc", _h100, 16, 8, 16]
	v.classes == ["scavenger", "spot"]
	some w in quota.warn with input as _svc_input(16, _h100) with data.mandate.model as testing.model
	[w.code, w.tenant, w.product, w.limit, w.current, w.needs] == ["QUOTA_TURNED_PREEMPTIBLE", "svc", _h100, 16, 8, 16]
}
