# METADATA
# description: |
#   Fixtures shared by the policy tests: an admission input builder, a small
#   cluster in the shape mandate.placement accepts inline and (in
#   model_test.rego) a small authority model to mock data.mandate.model with.
#   They live in _test.rego files so they never ship in a bundle.
package mandate.testing

h100 := "NVIDIA-H100-80GB-HBM3"

b200 := "NVIDIA-B200"

# workload(overrides) is a one-pod, 8-GPU training Job with fields replaced.
workload(overrides) := object.union(
	{
		"kind": "Job", "apiVersion": "batch/v1", "name": "w", "namespace": "ns",
		"class": "training", "pods": 1, "minPods": 0,
		"gpusPerPod": 8, "totalGPUs": 8, "gpuResource": "nvidia.com/gpu", "gpuProduct": "",
		"priorityClass": "", "topology": {"required": "", "preferred": ""},
		"scheduler": "", "roles": [], "labels": {}, "annotations": {},
	},
	overrides,
)

# input_for(tenant, overrides) is an admission input from a namespace of the
# tenant, with no GPUs in use.
input_for(tenant, overrides) := {
	"request": {"operation": "CREATE", "user": "alice", "groups": [], "dryRun": false},
	"namespace": {"name": "ns", "labels": {"mandate.dev/tenant": tenant}},
	"workload": workload(overrides),
	"usage": {},
}

# gang(pods, gpus) sizes a workload.
gang(pods, gpus) := {"pods": pods, "gpusPerPod": gpus, "totalGPUs": pods * gpus}

_node(name, zone, spine, block, clique, product, used) := {
	"name": name,
	"labels": {
		"topology.kubernetes.io/zone": zone,
		"mandate.dev/spine-block": spine,
		"mandate.dev/leaf-block": block,
		"nvidia.com/gpu.clique": clique,
		"kubernetes.io/hostname": name,
		"nvidia.com/gpu.product": product,
	},
	"allocatable": {"nvidia.com/gpu": 8},
	"used": {"nvidia.com/gpu": used},
}

# cluster is cluster_for the levels of the fixture model (see model_test.rego).
cluster := cluster_for(model.topology.levels)

# cluster_for(levels): two H100 leaf blocks of one 4-node NVLink clique each
# (b1 has 2 whole nodes free, b2 has 3) and a 2-node B200 block in another
# zone, described with the given levels (whose node labels must be the zone,
# spine-block, leaf-block, clique and hostname labels the nodes carry).
cluster_for(levels) := {
	"levels": levels,
	"nodes": [
		_node("h1", "zone-a", "s1", "b1", "c1", h100, 8),
		_node("h2", "zone-a", "s1", "b1", "c1", h100, 0),
		_node("h3", "zone-a", "s1", "b1", "c1", h100, 4),
		_node("h4", "zone-a", "s1", "b1", "c1", h100, 0),
		_node("h5", "zone-a", "s1", "b2", "c2", h100, 0),
		_node("h6", "zone-a", "s1", "b2", "c2", h100, 0),
		_node("h7", "zone-a", "s1", "b2", "c2", h100, 0),
		_node("h8", "zone-a", "s1", "b2", "c2", h100, 2),
		_node("g1", "zone-b", "s2", "b3", "c3", b200, 0),
		_node("g2", "zone-b", "s2", "b3", "c3", b200, 0),
	],
}

# codes lists the codes of a set of violations.
codes(vs) := {v.code | some v in vs}
