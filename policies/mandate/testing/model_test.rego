# The authority model the logic tests decide with, given to every
# expression under test as `with data.mandate.model as testing.model`.
# It is frozen here, apart from the shipped data.json, so that an
# organisation replacing the example model does not break the logic
# suite; tests of the shipped data itself sit beside it in
# policies/mandate/model/.
package mandate.testing

model := {
	"org": "Logic-test fixture (a frozen copy of the example organisation, independent of the shipped data)",
	"tenants": {
		"helix": {
			"parent": "",
			"description": "The whole organisation: caps every team.",
			"quota": {
				"nvidia.com/gpu": {
					"guaranteed": 320,
					"ceiling": 384,
				},
				"nvidia.com/mig-1g.10gb": {
					"guaranteed": 56,
					"ceiling": 56,
				},
			},
			"priorityClasses": [
				"train",
				"build-preemptible",
				"build",
				"inference",
			],
			"scheduler": "kai",
			"queue": "helix",
		},
		"research": {
			"parent": "helix",
			"description": "Research division: large preemptible training.",
			"quota": {
				"nvidia.com/gpu": {
					"guaranteed": 128,
					"ceiling": 320,
				},
			},
			"priorityClasses": [
				"train",
				"build-preemptible",
				"build",
			],
			"scheduler": "volcano",
			"queue": "research",
		},
		"research-llm": {
			"parent": "research",
			"description": "Foundation-model pre-training.",
			"quota": {
				"nvidia.com/gpu": {
					"guaranteed": 96,
					"ceiling": 256,
				},
			},
			"queue": "research-llm",
		},
		"research-vision": {
			"parent": "research",
			"description": "Vision models; small experiments.",
			"quota": {
				"nvidia.com/gpu": {
					"guaranteed": 16,
					"ceiling": 64,
				},
			},
			"priorityClasses": [
				"train",
				"build-preemptible",
			],
			"queue": "research-vision",
		},
		"product": {
			"parent": "helix",
			"description": "Production inference and fine-tuning.",
			"quota": {
				"nvidia.com/gpu": {
					"guaranteed": 128,
					"ceiling": 160,
				},
				"nvidia.com/mig-1g.10gb": {
					"guaranteed": 28,
					"ceiling": 56,
				},
			},
			"priorityClasses": [
				"train",
				"build-preemptible",
				"build",
				"inference",
			],
			"scheduler": "kai",
			"queue": "product",
		},
		"platform": {
			"parent": "helix",
			"description": "Platform team: CI and notebooks.",
			"quota": {
				"nvidia.com/gpu": {
					"guaranteed": 8,
					"ceiling": 16,
				},
			},
			"priorityClasses": [
				"build-preemptible",
				"build",
			],
			"scheduler": "kai",
			"queue": "platform",
		},
	},
	"priorities": {
		"train": {
			"value": 50,
			"preemptible": true,
			"description": "Training: runs on idle capacity, yields to everything above.",
		},
		"build-preemptible": {
			"value": 75,
			"preemptible": true,
			"description": "Interactive builds that may be interrupted.",
		},
		"build": {
			"value": 100,
			"preemptible": false,
			"description": "Interactive builds and notebooks: never preempted, in-quota only.",
		},
		"inference": {
			"value": 125,
			"preemptible": false,
			"description": "Serving: highest tier, in-quota only.",
		},
	},
	"classDefaults": {
		"training": "train",
		"batch": "build-preemptible",
		"interactive": "build",
		"inference": "inference",
	},
	"quotaPolicy": {
		"overGuarantee": "preemptible",
	},
	"preemption": {
		"mayPreempt": {
			"inference": [
				"train",
				"build-preemptible",
			],
			"build": [
				"train",
				"build-preemptible",
			],
			"build-preemptible": [
				"train",
			],
			"train": [],
		},
		"gangsWhole": true,
	},
	"topology": {
		"name": "helix-fabric",
		"levels": [
			{
				"name": "zone",
				"nodeLabel": "topology.kubernetes.io/zone",
			},
			{
				"name": "spine",
				"nodeLabel": "mandate.dev/spine-block",
			},
			{
				"name": "block",
				"nodeLabel": "mandate.dev/leaf-block",
			},
			{
				"name": "clique",
				"nodeLabel": "nvidia.com/gpu.clique",
			},
			{
				"name": "node",
				"nodeLabel": "kubernetes.io/hostname",
			},
		],
		"rules": [
			{
				"maxGPUs": 8,
				"required": "node",
			},
			{
				"maxGPUs": 32,
				"required": "clique",
				"preferred": "clique",
			},
			{
				"maxGPUs": 256,
				"required": "block",
				"preferred": "clique",
			},
			{
				"maxGPUs": 4096,
				"required": "spine",
				"preferred": "block",
			},
			{
				"required": "zone",
				"preferred": "spine",
			},
		],
	},
	"enforcement": {
		"tenancy": "deny",
		"priority": "deny",
		"quota": "deny",
		"topology": "deny",
		"preemption": "deny",
	},
}
