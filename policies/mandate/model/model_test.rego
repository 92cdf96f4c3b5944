# METADATA
# description: |
#   Tests of the shipped authority data itself, the example organisation
#   Helix Labs in data.json: that it is consistent (every name it uses is
#   defined, every enforcement entry is an action) and that its tenants
#   decide as the example expects. The rules' logic is tested elsewhere
#   against the fixture model in mandate.testing; an organisation that
#   replaces data.json replaces this file with tests of its own.
package mandate.model_test

import data.mandate
import data.mandate.enforcement
import data.mandate.model
import data.mandate.testing

# The fixture cluster, described with this organisation's topology levels.
_cluster := testing.cluster_for(model.topology.levels)

_decide(tenant, overrides) := d if {
	d := mandate.decision with input as testing.input_for(tenant, overrides)
		with data.mandate.cluster as _cluster
}

# Consistency. Each check is a rule over the data, tested as shipped and
# against a broken copy, so a typo fails CI (and `mandate bundle build
# --test`) before it ships.

# The authority data names only known enforcement actions.
_enforcement_known if {
	every key, a in model.enforcement {
		is_string(key)
		a in enforcement.actions
	}
}

test_enforcement_names_only_known_actions if {
	_enforcement_known
}

test_enforcement_check_catches_a_typo if {
	not _enforcement_known with data.mandate.model.enforcement as {"quota": "dryrun", "topology": "denny"}
}

# Every parent is a tenant, and no chain is deeper than the six tenants
# mandate.lib walks.
_hierarchy_ok if {
	every name, t in model.tenants {
		_parent_known(t.parent)
		_depth(name) <= 6
	}
}

_parent_known("")

_parent_known(p) if model.tenants[p]

_depth(name) := count([a |
	a1 := object.get(model.tenants, [name, "parent"], "")
	a2 := object.get(model.tenants, [a1, "parent"], "")
	a3 := object.get(model.tenants, [a2, "parent"], "")
	a4 := object.get(model.tenants, [a3, "parent"], "")
	a5 := object.get(model.tenants, [a4, "parent"], "")
	a6 := object.get(model.tenants, [a5, "parent"], "")
	some a in [name, a1, a2, a3, a4, a5, a6]
	a != ""
])

test_hierarchy_is_sound if {
	_hierarchy_ok
}

test_hierarchy_check_catches_an_unknown_parent if {
	not _hierarchy_ok with data.mandate.model.tenants.platform.parent as "helics"
}

test_hierarchy_check_catches_a_chain_too_deep if {
	deep := {
		"t1": {"parent": ""}, "t2": {"parent": "t1"}, "t3": {"parent": "t2"}, "t4": {"parent": "t3"},
		"t5": {"parent": "t4"}, "t6": {"parent": "t5"}, "t7": {"parent": "t6"},
	}
	not _hierarchy_ok with data.mandate.model.tenants as deep
	_hierarchy_ok with data.mandate.model.tenants as object.remove(deep, ["t7"])
}

# Every priority class the data names (tenants' lists, workload-class
# defaults, who may preempt whom) is a tier.
_classes_known if {
	every t in model.tenants {
		every c in object.get(t, "priorityClasses", []) {
			model.priorities[c]
		}
	}
	every c in model.classDefaults {
		model.priorities[c]
	}
	every c, victims in model.preemption.mayPreempt {
		model.priorities[c]
		every v in victims {
			model.priorities[v]
		}
	}
}

test_priority_classes_are_tiers if {
	_classes_known
}

test_priority_class_check_catches_unknown_classes if {
	not _classes_known with data.mandate.model.tenants.platform.priorityClasses as ["build", "bulid-preemptible"]
	not _classes_known with data.mandate.model.classDefaults.batch as "batch"
	not _classes_known with data.mandate.model.preemption.mayPreempt.build as ["trian"]
}

# Every quota guarantees no more than its ceiling.
_quotas_ok if {
	every t in model.tenants {
		every q in object.get(t, "quota", {}) {
			q.guaranteed <= q.ceiling
		}
	}
}

test_quotas_guarantee_within_ceiling if {
	_quotas_ok
}

test_quota_check_catches_a_guarantee_above_ceiling if {
	not _quotas_ok with data.mandate.model.tenants.platform.quota as {"nvidia.com/gpu": {"guaranteed": 24, "ceiling": 16}}
}

# The topology rules name levels of the topology, and a rule without
# maxGPUs comes last.
_topology_ok if {
	names := {l.name | some l in model.topology.levels}
	last := count(model.topology.rules) - 1
	every i, r in model.topology.rules {
		r.required in names
		object.get(r, "preferred", r.required) in names
		_bounded_or_last(r, i, last)
	}
}

_bounded_or_last(r, _, _) if is_number(r.maxGPUs)

_bounded_or_last(_, i, i)

test_topology_rules_name_levels if {
	_topology_ok
}

test_topology_check_catches_an_unknown_level if {
	not _topology_ok with data.mandate.model.topology.rules as [{"maxGPUs": 8, "required": "rack"}, {"required": "zone"}]
	not _topology_ok with data.mandate.model.topology.rules as [{"required": "zone"}, {"maxGPUs": 8, "required": "node"}]
}

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
