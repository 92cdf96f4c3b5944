package mandate.testing

# A small authority model the logic tests mock data.mandate.model with
# (`with data.mandate.model as testing.model`), so they test the rules, not
# the example organisation shipped in mandate/model/data.json: replacing
# that file must not break them. The tests of that organisation's data
# (package mandate.model_test) sit beside data.json.
#
# Tenants:
#   org ─┬─ lab (volcano) ─┬─ lab-a (inherits lab's classes, own queue)
#        │                 └─ lab-b (preemptible classes only, no queue)
#        ├─ svc (kai; a MIG quota of its own, and nvidia.com/gpu quota per
#        │       product: H100 and B200)
#        └─ ops (no scheduler anywhere in its chain, no queue)
# Tiers, lowest first: scavenger (10) and spot (20) are preemptible,
# standard (30) and critical (40) are not.
model := {
	"org": "Fixture Org",
	"tenants": {
		"org": {
			"parent": "",
			"quota": {
				"nvidia.com/gpu": {"guaranteed": 64, "ceiling": 96},
				"nvidia.com/mig-1g.10gb": {"guaranteed": 8, "ceiling": 8},
			},
			"priorityClasses": ["scavenger", "spot", "standard", "critical"],
			"queue": "org",
		},
		"lab": {
			"parent": "org",
			"quota": {"nvidia.com/gpu": {"guaranteed": 32, "ceiling": 80}},
			"priorityClasses": ["scavenger", "spot", "standard"],
			"scheduler": "volcano",
			"queue": "lab",
		},
		"lab-a": {
			"parent": "lab",
			"quota": {"nvidia.com/gpu": {"guaranteed": 16, "ceiling": 64}},
			"queue": "lab-a-queue",
		},
		"lab-b": {
			"parent": "lab",
			"quota": {"nvidia.com/gpu": {"guaranteed": 8, "ceiling": 32}},
			"priorityClasses": ["scavenger", "spot"],
		},
		"svc": {
			"parent": "org",
			"quota": {
				"nvidia.com/gpu": {"guaranteed": 32, "ceiling": 40, "products": {
					"NVIDIA-H100-80GB-HBM3": {"guaranteed": 16, "ceiling": 24},
					"NVIDIA-B200": {"guaranteed": 8, "ceiling": 16},
				}},
				"nvidia.com/mig-1g.10gb": {"guaranteed": 4, "ceiling": 8},
			},
			"priorityClasses": ["scavenger", "spot", "standard", "critical"],
			"scheduler": "kai",
			"queue": "svc",
		},
		"ops": {
			"parent": "org",
			"quota": {"nvidia.com/gpu": {"guaranteed": 4, "ceiling": 8}},
			"priorityClasses": ["spot", "standard"],
		},
	},
	"priorities": {
		"scavenger": {"value": 10, "preemptible": true},
		"spot": {"value": 20, "preemptible": true},
		"standard": {"value": 30, "preemptible": false},
		"critical": {"value": 40, "preemptible": false},
	},
	"classDefaults": {
		"training": "scavenger",
		"batch": "spot",
		"interactive": "standard",
		"inference": "critical",
	},
	"quotaPolicy": {"overGuarantee": "preemptible"},
	"preemption": {
		"mayPreempt": {
			"critical": ["scavenger", "spot"],
			"standard": ["scavenger", "spot"],
			"spot": ["scavenger"],
			"scavenger": [],
		},
		"gangsWhole": true,
	},
	"topology": {
		"name": "fixture-fabric",
		"levels": [
			{"name": "zone", "nodeLabel": "topology.kubernetes.io/zone"},
			{"name": "spine", "nodeLabel": "mandate.dev/spine-block"},
			{"name": "block", "nodeLabel": "mandate.dev/leaf-block"},
			{"name": "clique", "nodeLabel": "nvidia.com/gpu.clique"},
			{"name": "node", "nodeLabel": "kubernetes.io/hostname"},
		],
		"rules": [
			{"maxGPUs": 8, "required": "node"},
			{"maxGPUs": 32, "required": "clique", "preferred": "clique"},
			{"maxGPUs": 256, "required": "block", "preferred": "clique"},
			{"maxGPUs": 4096, "required": "spine", "preferred": "block"},
			{"required": "zone", "preferred": "spine"},
		],
	},
	# Nothing listed: every violation denies unless a test stages it.
	"enforcement": {},
}

# staged(entries) is the fixture model with entries as its enforcement.
staged(entries) := json.patch(model, [{"op": "add", "path": "/enforcement", "value": entries}])
