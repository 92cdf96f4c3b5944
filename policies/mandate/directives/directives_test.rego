package mandate.directives_test

import data.mandate.directives
import data.mandate.testing

test_volcano_tenant_directives if {
	d := directives.directives with input as testing.input_for("lab-a", testing.gang(8, 8)) with data.mandate.model as testing.model
	d.scheduler == "volcano"
	d.queue == "lab-a-queue"
	d.priorityClass == "scavenger"
	d.preemptible == true
	d.gangMin == 8
	d.requiredLevel == "block"
	d.requiredLabel == "mandate.dev/leaf-block"
	d.requiredTier == 2
	d.preferredLevel == "clique"
	d.preferredLabel == "nvidia.com/gpu.clique"
	d.preferredTier == 1
	d.topologyName == "fixture-fabric"
	d.labels == {"mandate.dev/tenant": "lab-a"}
	d.annotations == {"mandate.dev/class": "training"}
}

test_kai_tenant_directives if {
	d := directives.directives with input as testing.input_for("svc", {"class": "inference", "gpusPerPod": 1, "totalGPUs": 1})
		with data.mandate.model as testing.model
	d.scheduler == "kai"
	d.queue == "svc"
	d.priorityClass == "critical"
	d.preemptible == false
	d.requiredLevel == "node"
	d.preferredLevel == ""
	d.preferredLabel == ""
	d.annotations == {"mandate.dev/class": "inference", "mandate.dev/may-preempt": "scavenger,spot"}
}

test_no_scheduler_in_the_chain_means_default if {
	d := directives.directives with input as testing.input_for("ops", {"class": "batch"}) with data.mandate.model as testing.model
	d.scheduler == "default"
	d.queue == "ops"
	d.priorityClass == "spot"
}

test_cpu_only_work_gets_no_topology if {
	d := directives.directives with input as testing.input_for("ops", {"gpusPerPod": 0, "totalGPUs": 0, "gpuResource": ""})
		with data.mandate.model as testing.model
	d.requiredLevel == ""
	d.topologyName == ""
}

test_unknown_tenant_gets_no_directives if {
	not directives.directives with input as testing.input_for("nobody", {}) with data.mandate.model as testing.model
}

# Non-preemptible work beyond the guarantee runs at its tier's borrowed
# class, below every guaranteed tier; the tier is still named.
test_work_beyond_the_guarantee_runs_at_the_borrowed_class if {
	d := directives.directives with input as object.union(
		testing.input_for("svc", object.union(testing.gang(2, 8), {"priorityClass": "critical"})),
		{"usage": {"svc": {"nvidia.com/gpu": {"total": 24, "nonPreemptible": 24}}}},
	)
		with data.mandate.model as testing.model
	d.priorityClass == "critical-borrowed"
	d.tier == "critical"
	d.preemptible == true
}

# A preemptible tier keeps its class beyond the guarantee too.
test_preemptible_tiers_keep_their_class if {
	d := directives.directives with input as testing.input_for("lab-a", testing.gang(8, 8)) with data.mandate.model as testing.model
	d.priorityClass == "scavenger"
	d.tier == "scavenger"
}
