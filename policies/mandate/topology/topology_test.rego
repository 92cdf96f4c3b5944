package mandate.topology_test

import data.mandate.testing
import data.mandate.topology

_in(overrides) := testing.input_for("lab-a", overrides)

test_required_level_follows_gang_size if {
	topology.required_level == "node" with input as _in(testing.gang(1, 8)) with data.mandate.model as testing.model
	topology.required_level == "clique" with input as _in(testing.gang(3, 8)) with data.mandate.model as testing.model
	topology.required_level == "block" with input as _in(testing.gang(8, 8)) with data.mandate.model as testing.model
	topology.required_level == "spine" with input as _in(testing.gang(64, 8)) with data.mandate.model as testing.model
	topology.required_level == "zone" with input as _in(testing.gang(1024, 8)) with data.mandate.model as testing.model
}

test_fitting_gang_passes_best_fit if {
	inp := _in(testing.gang(3, 8))
	p := topology.placement with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	p.fitsNow
	p.domain == "zone-a/s1/b2/c2"
	count(topology.deny) == 0 with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	count(topology.warn) == 0 with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
}

test_gang_that_never_fits_is_denied if {
	inp := _in(testing.gang(5, 8))
	some v in topology.deny with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	v.code == "TOPOLOGY_NEVER_FITS"
	v.message == "a gang of 5 pods × 8 nvidia.com/gpu must sit within one block, but the largest block (zone-a/s1/b1) holds only 4 such pods even when empty; ask for at most 4 pods or fewer GPUs per pod"
}

test_gang_that_does_not_fit_now_waits if {
	inp := _in(testing.gang(4, 8))
	count(topology.deny) == 0 with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	some v in topology.warn with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	v.code == "TOPOLOGY_WAITS"
	contains(v.message, "the roomiest clique (zone-a/s1/b2/c2) has 3 of the 4 pod slots it needs free")
}

test_missing_product_never_fits if {
	inp := _in({"gpuProduct": "NVIDIA-GB300"})
	some v in topology.deny with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	v.message == "a gang of 1 pods × 8 nvidia.com/gpu (NVIDIA-GB300) can never be placed: no healthy node in this cluster offers 8 nvidia.com/gpu (NVIDIA-GB300) per pod"
	count(topology.deny) == 0 with input as _in({"gpuProduct": testing.b200}) with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
}

test_unknown_level_is_denied if {
	inp := _in({"topology": {"required": "rack", "preferred": ""}})
	some v in topology.deny with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	v.code == "TOPOLOGY_UNKNOWN_LEVEL"
	contains(v.message, "zone, spine, block, clique, node")
}

test_tighter_requested_level_is_honoured if {
	inp := _in(object.union(testing.gang(2, 8), {"topology": {"required": "node", "preferred": ""}}))
	topology.required_level == "node" with input as inp with data.mandate.model as testing.model
	some v in topology.deny with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	v.code == "TOPOLOGY_NEVER_FITS"
}

test_looser_requested_level_is_ignored if {
	inp := _in(object.union(testing.gang(2, 8), {"topology": {"required": "zone", "preferred": ""}}))
	topology.required_level == "clique" with input as inp with data.mandate.model as testing.model
}

test_no_snapshot_warns_unchecked if {
	some v in topology.warn with input as _in({}) with data.mandate.model as testing.model
	v.code == "TOPOLOGY_UNCHECKED"
}

test_requested_preferred_level_wins_over_the_rules if {
	inp := _in(object.union(testing.gang(8, 8), {"topology": {"required": "", "preferred": "node"}}))
	topology.required_level == "block" with input as inp with data.mandate.model as testing.model
	topology.preferred_level == "node" with input as inp with data.mandate.model as testing.model
	topology.preferred_level == "clique" with input as _in(testing.gang(8, 8)) with data.mandate.model as testing.model
}

test_preferred_level_wider_than_required_is_ignored if {
	inp := _in(object.union(testing.gang(8, 8), {"topology": {"required": "", "preferred": "zone"}}))
	topology.preferred_level == "clique" with input as inp with data.mandate.model as testing.model
}

test_levels_give_label_and_tier if {
	topology.levels == {
		"zone": {"label": "topology.kubernetes.io/zone", "tier": 4},
		"spine": {"label": "mandate.dev/spine-block", "tier": 3},
		"block": {"label": "mandate.dev/leaf-block", "tier": 2},
		"clique": {"label": "nvidia.com/gpu.clique", "tier": 1},
		"node": {"label": "kubernetes.io/hostname", "tier": 0},
	} with input as _in({}) with data.mandate.model as testing.model
	topology.level("rack") == {"label": "", "tier": 0} with input as _in({}) with data.mandate.model as testing.model
}

test_explanation_of_a_fitting_gang if {
	e := topology.explain with input as _in(testing.gang(3, 8)) with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	e.verdict == "ok"
	e.limit == "one clique; the largest holds 4 pods"
	e.current == "fits in clique zone-a/s1/b2/c2 (score 0.8, 6 GPUs left there)"
}

test_explanation_of_a_waiting_gang if {
	e := topology.explain with input as _in(testing.gang(4, 8)) with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	e.verdict == "warn"
	e.current == "the roomiest clique (zone-a/s1/b2/c2) has 3 of the 4 pod slots it needs free"
}

# _half_used is the fixture cluster with 4 of every H100 node's 8 GPUs in
# use: no node has room for an 8-GPU pod, though every one could hold it.
_half_used := object.union(testing.cluster, {"nodes": [object.union(n, {"used": {"nvidia.com/gpu": 4}}) |
	some n in testing.cluster.nodes
	n.labels["nvidia.com/gpu.product"] == testing.h100
]})

test_waiting_gang_with_no_room_anywhere_names_what_was_considered if {
	inp := _in(testing.gang(1, 8))
	some v in topology.warn with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as _half_used
	v.code == "TOPOLOGY_WAITS"
	v.message == "a gang of 1 pods × 8 nvidia.com/gpu does not fit right now: none of the 8 node domains considered has a node with 8 free nvidia.com/gpu (the freest, zone-a/s1/b1/c1/h1, has 4 free GPUs, at most 4 on one node); it waits in the queue until capacity frees up"
	not contains(v.message, "()")
}

test_waiting_gang_with_nothing_free_says_so if {
	full := object.union(testing.cluster, {"nodes": [object.union(n, {"used": {"nvidia.com/gpu": 8}}) |
		some n in testing.cluster.nodes
		n.labels["nvidia.com/gpu.product"] == testing.h100
	]})
	e := topology.explain with input as _in(testing.gang(1, 8)) with data.mandate.model as testing.model
		with data.mandate.cluster as full
	e.current == "none of the 8 node domains considered has a free nvidia.com/gpu"
}

test_elastic_maximum_that_never_fits_says_how_many_could if {
	inp := _in({"pods": 12, "minPods": 3, "gpusPerPod": 8, "totalGPUs": 96, "topology": {"required": "block", "preferred": ""}})
	count(topology.deny) == 0 with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	some v in topology.warn with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	v.code == "TOPOLOGY_ELASTIC_MAX_NEVER_FITS"
	v.message == "the elastic gang may grow to 12 pods × 8 nvidia.com/gpu, but it must sit within one block and the largest block (zone-a/s1/b1) holds only 4 such pods even when empty: it can grow to at most 4 pods there"
}

test_elastic_maximum_that_fits_is_silent if {
	inp := _in({"pods": 4, "minPods": 2, "gpusPerPod": 8, "totalGPUs": 32, "topology": {"required": "block", "preferred": ""}})
	warns := topology.warn with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	every v in warns {
		v.code != "TOPOLOGY_ELASTIC_MAX_NEVER_FITS"
	}
}

# A kind's own placement key names a node label (JobSet's exclusive-topology
# annotation): the level with that label is required; a label no level has
# asks for nothing, and is no unknown level.
test_required_node_label_names_a_level if {
	asks := object.union(testing.gang(3, 8), {"topology": {"required": "", "preferred": "", "requiredNodeLabel": "kubernetes.io/hostname"}})
	topology.required_level == "node" with input as _in(asks) with data.mandate.model as testing.model
	other := object.union(testing.gang(3, 8), {"topology": {"required": "", "preferred": "", "requiredNodeLabel": "example.com/rack"}})
	topology.required_level == "clique" with input as _in(other) with data.mandate.model as testing.model
	count(topology.facts.unknown) == 0 with input as _in(other) with data.mandate.model as testing.model
}

# A node with 4 free H100s (4 used): 16 quarter-GPU pods pack onto them.
_shared_cluster := {"levels": testing.model.topology.levels, "nodes": [{
	"name": "h1",
	"labels": {
		"topology.kubernetes.io/zone": "zone-a", "mandate.dev/spine-block": "s1", "mandate.dev/leaf-block": "b1",
		"nvidia.com/gpu.clique": "c1", "kubernetes.io/hostname": "h1", "nvidia.com/gpu.product": testing.h100,
	},
	"allocatable": {"nvidia.com/gpu": 8},
	"used": {"nvidia.com/gpu": 2},
	"sharedMilli": {"nvidia.com/gpu": 1750},
}]}

test_shared_pods_pack_onto_devices if {
	inp := _in({"pods": 16, "gpusPerPod": 1, "totalGPUs": 4, "totalMilliGPUs": 4000, "gpuFraction": 0.25, "gpuShareMilli": 250})
	p := topology.placement with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as _shared_cluster
	p.fitsNow
	p.domain == "zone-a/s1/b1/c1/h1"
	p.bestNow.podSlots == 16
	p.freeAfter == 0
	count(topology.warn) == 0 with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as _shared_cluster
}

test_shared_pods_on_a_device_each_would_wait if {
	inp := _in({"pods": 17, "gpusPerPod": 1, "totalGPUs": 5, "totalMilliGPUs": 4250, "gpuFraction": 0.25, "gpuShareMilli": 250})
	some v in topology.warn with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as _shared_cluster
	v.code == "TOPOLOGY_WAITS"
	contains(v.message, "a gang of 17 pods × 1 nvidia.com/gpu (250/1000 of each, shared) does not fit right now")
	contains(v.message, "has 16 of the 17 pod slots it needs free")
}

# Reasons as data: the level, the domain named and the pod slots, so no
# reader parses the text.

test_never_fits_carries_the_largest_domain if {
	some v in topology.deny with input as _in(testing.gang(5, 8)) with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	object.filter(v, {"code", "level", "domain", "limit", "needs", "resource", "product"}) == {
		"code": "TOPOLOGY_NEVER_FITS", "level": "block", "domain": "zone-a/s1/b1",
		"limit": 4, "needs": 5, "resource": "nvidia.com/gpu", "product": "",
	}
}

test_never_fits_anywhere_names_no_domain if {
	some v in topology.deny with input as _in({"gpuProduct": "NVIDIA-GB300"}) with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	[v.code, v.product, v.limit, v.needs] == ["TOPOLOGY_NEVER_FITS", "NVIDIA-GB300", 0, 1]
	not v.domain
}

test_waiting_gang_carries_the_roomiest_domain if {
	some v in topology.warn with input as _in(testing.gang(4, 8)) with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	[v.code, v.level, v.domain, v.current, v.needs] == ["TOPOLOGY_WAITS", "clique", "zone-a/s1/b2/c2", 3, 4]
}

test_waiting_gang_without_room_names_no_domain if {
	some v in topology.warn with input as _in(testing.gang(1, 8)) with data.mandate.model as testing.model
		with data.mandate.cluster as _half_used
	[v.code, v.level, v.current, v.needs] == ["TOPOLOGY_WAITS", "node", 0, 1]
	not v.domain
}

test_unknown_level_names_it if {
	some v in topology.deny with input as _in({"topology": {"required": "rack", "preferred": ""}})
		with data.mandate.model as testing.model with data.mandate.cluster as testing.cluster
	[v.code, v.level] == ["TOPOLOGY_UNKNOWN_LEVEL", "rack"]
}

test_elastic_maximum_carries_the_largest_domain_and_every_pod if {
	inp := _in({"pods": 12, "minPods": 3, "gpusPerPod": 8, "totalGPUs": 96, "topology": {"required": "block", "preferred": ""}})
	some v in topology.warn with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as testing.cluster
	[v.code, v.level, v.domain, v.limit, v.needs] == ["TOPOLOGY_ELASTIC_MAX_NEVER_FITS", "block", "zone-a/s1/b1", 4, 12]
}

# lab-a is confined to block b1 and isolated at the clique level.
_pooled_model := object.union(testing.model, {
	"topology": object.union(testing.model.topology, {"pools": {"b1": {"level": "block", "domains": ["b1"]}}}),
	"tenants": object.union(testing.model.tenants, {"lab-a": object.union(
		testing.model.tenants["lab-a"],
		{"placement": {"allowed": "b1", "isolation": "clique"}},
	)}),
})

_pooled_cluster := object.union(testing.cluster, {"pools": {"b1": {"mandate.dev/leaf-block": ["b1"]}}})

test_pool_confines_the_search if {
	# B200 nodes sit outside b1: lab-a's gang of them could fit only
	# outside its pool, so it never fits, and the pool is named.
	inp := _in({"gpuProduct": testing.b200})
	some v in topology.deny with input as inp with data.mandate.model as _pooled_model
		with data.mandate.cluster as _pooled_cluster
	v.code == "TOPOLOGY_NEVER_FITS"
	v.pool == "b1"
	v.message == "a gang of 1 pods × 8 nvidia.com/gpu (NVIDIA-B200) can never be placed: no healthy node of pool b1 (tenants.lab-a.placement.allowed) offers 8 nvidia.com/gpu (NVIDIA-B200) per pod"

	# Without the pool the same gang fits.
	count(topology.deny) == 0 with input as inp with data.mandate.model as testing.model
		with data.mandate.cluster as _pooled_cluster
}

test_pool_best_fit_stays_inside if {
	# Three whole nodes: b2 has them free, but lab-a may only use b1, where
	# the clique has two: it waits, naming b1's clique.
	inp := _in(testing.gang(3, 8))
	p := topology.placement with input as inp with data.mandate.model as _pooled_model
		with data.mandate.cluster as _pooled_cluster
	not p.fitsNow
	p.fitsEmpty
	p.bestNow.domain == "zone-a/s1/b1/c1"
}

test_placement_directive if {
	d := data.mandate.directives.directives with input as _in({}) with data.mandate.model as _pooled_model
		with data.mandate.cluster as _pooled_cluster
	d.placement == {
		"pool": "b1", "rule": "tenants.lab-a.placement.allowed",
		"nodeSelector": {"mandate.dev/leaf-block": ["b1"]},
		"isolationLevel": "clique", "isolationLabel": "nvidia.com/gpu.clique", "isolationUnit": "lab-a",
	}
	d2 := data.mandate.directives.directives with input as _in({}) with data.mandate.model as testing.model
	not d2.placement
}
