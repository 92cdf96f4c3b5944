# METADATA
# description: |
#   Tests of the shipped authority data itself, the example organisation
#   Helix Labs in data.json: that its tenants decide as the example
#   expects (check_test.rego, beside it, checks that the data is
#   consistent). The rules' logic is tested elsewhere against the fixture
#   model in mandate.testing; an organisation that replaces data.json
#   replaces this file with tests of its own.
package mandate.model_test

import data.mandate
import data.mandate.model
import data.mandate.testing

# The fixture cluster, described with this organisation's topology levels.
_cluster := testing.cluster_for(model.topology.levels)

_decide(tenant, overrides) := d if {
	d := mandate.decision with input as testing.input_for(tenant, overrides)
		with data.mandate.cluster as _cluster
}

# Consistency: the checks of the data itself (every name it uses is
# defined, guarantees within ceilings, no cycles, …) are in check_test.rego
# beside this file, which holds for any organisation's data.

# The example's decisions, with the fixture cluster.

test_research_llm_training_is_admitted_on_volcano if {
	d := _decide("research-llm", testing.gang(3, 8))
	d.allowed
	d.violations == []
	d.warnings == []
	d.directives.scheduler == "volcano"
	d.directives.queue == "research-llm"
	d.directives.priorityClass == "train"
	d.directives.preemptible == true
	d.directives.requiredLevel == "clique"
	explained := mandate.explanations with input as testing.input_for("research-llm", testing.gang(3, 8))
		with data.mandate.cluster as _cluster
	[e.dimension | some e in explained] == ["tenancy", "priority", "quota", "topology", "preemption"]
}

test_research_llm_large_gang_directives if {
	d := _decide("research-llm", testing.gang(8, 8))
	d.directives.gangMin == 8
	d.directives.requiredLevel == "block"
	d.directives.requiredLabel == "mandate.dev/leaf-block"
	d.directives.requiredTier == 2
	d.directives.preferredLevel == "clique"
	d.directives.preferredTier == 1
	d.directives.topologyName == "helix-fabric"
	d.directives.labels == {"mandate.dev/tenant": "research-llm"}
}

test_product_inference_is_admitted_on_kai if {
	d := _decide("product", {"class": "inference", "gpusPerPod": 1, "totalGPUs": 1})
	d.allowed
	d.directives.scheduler == "kai"
	d.directives.queue == "product"
	d.directives.priorityClass == "inference"
	d.directives.preemptible == false
	d.directives.requiredLevel == "node"
	d.directives.annotations["mandate.dev/may-preempt"] == "train,build-preemptible"
}

test_research_vision_above_its_tier_and_ceiling_is_denied if {
	d := _decide("research-vision", object.union(testing.gang(16, 8), {"priorityClass": "inference"}))
	not d.allowed
	{v.code | some v in d.violations} == {"PRIORITY_NOT_ALLOWED", "QUOTA_EXCEEDS_CEILING", "TOPOLOGY_NEVER_FITS"}
	some v in d.violations
	v.code == "QUOTA_EXCEEDS_CEILING"
	v.message == "the workload needs 128 nvidia.com/gpu but tenant research-vision's ceiling is 64, so it could never run; ask for at most 64 or have the ceiling of research-vision raised"
}

test_research_vision_may_not_build if {
	d := _decide("research-vision", {"priorityClass": "build"})
	[v.message | some v in d.violations] == ["priority class build (100) is above tenant research-vision's tier; it may use: train (50), build-preemptible (75)"]
	_decide("research", {"priorityClass": "build"}).allowed
}

test_platform_uses_the_helix_mig_quota if {
	d := _decide("platform", {"gpuResource": "nvidia.com/mig-1g.10gb", "gpusPerPod": 1, "totalGPUs": 1})
	[v.code | some v in d.violations; v.dimension == "quota"] == []
	d2 := _decide("platform", {"gpuResource": "nvidia.com/mig-2g.20gb", "gpusPerPod": 1, "totalGPUs": 1})
	"QUOTA_NO_RESOURCE" in {v.code | some v in d2.violations}
}

test_product_build_beyond_guarantee_runs_preemptible if {
	inp := object.union(
		testing.input_for("product", object.union(testing.gang(2, 8), {"priorityClass": "build"})),
		{"usage": {"product": {"nvidia.com/gpu": {"total": 120, "nonPreemptible": 120}}}},
	)
	d := mandate.decision with input as inp with data.mandate.cluster as _cluster
	d.allowed
	[w | some w in d.warnings; contains(w, "tenant product has 120 of 128 guaranteed nvidia.com/gpu")] != []
	d.directives.preemptible == true
}

test_unknown_tenant_is_told_the_helix_tenants if {
	d := _decide("marketing", {})
	not d.allowed
	[v.message | some v in d.violations] == [`namespace "ns" is labelled mandate.dev/tenant=marketing, which is not a tenant of the authority model; known tenants: helix, platform, product, research, research-llm, research-vision`]
	d.directives == {}
}
