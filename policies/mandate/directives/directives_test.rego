package mandate.directives_test

import data.mandate.directives
import data.mandate.testing

test_volcano_tenant_directives if {
	d := directives.directives with input as testing.input_for("research-llm", testing.gang(8, 8)) with data.mandate.model as testing.model
	d.scheduler == "volcano"
	d.queue == "research-llm"
	d.priorityClass == "train"
	d.preemptible == true
	d.gangMin == 8
	d.requiredLevel == "block"
	d.requiredLabel == "mandate.dev/leaf-block"
	d.requiredTier == 2
	d.preferredLevel == "clique"
	d.preferredTier == 1
	d.topologyName == "helix-fabric"
	d.labels == {"mandate.dev/tenant": "research-llm"}
}

test_kai_tenant_directives if {
	d := directives.directives with input as testing.input_for("product", {"class": "inference", "gpusPerPod": 1, "totalGPUs": 1}) with data.mandate.model as testing.model
	d.scheduler == "kai"
	d.queue == "product"
	d.priorityClass == "inference"
	d.preemptible == false
	d.requiredLevel == "node"
	d.preferredLevel == ""
	d.preferredLabel == ""
}

test_cpu_only_work_gets_no_topology if {
	d := directives.directives with input as testing.input_for("platform", {"gpusPerPod": 0, "totalGPUs": 0, "gpuResource": ""}) with data.mandate.model as testing.model
	d.requiredLevel == ""
	d.topologyName == ""
}

test_unknown_tenant_gets_no_directives if {
	not directives.directives with input as testing.input_for("nobody", {}) with data.mandate.model as testing.model
}
