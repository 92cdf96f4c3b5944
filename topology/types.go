// Package topology owns Mandate's cluster model: configured topology levels,
// the domains they form (zone, spine block, leaf block, NVLink clique, node…),
// free and total GPU capacity per domain kept as aggregates, and the best-fit
// placement algorithm behind the mandate.placement Rego builtin.
package topology

import "slices"

// Level is one tier of the cluster's topology, top to bottom, named by the
// authority model and read from a node label. Levels are configured, never
// hard-coded.
type Level struct {
	Name      string `json:"name"`
	NodeLabel string `json:"nodeLabel"`
}

// Config says how nodes and pods become capacity.
type Config struct {
	// Levels from the widest (e.g. zone) to the narrowest (e.g. node, with
	// NodeLabel kubernetes.io/hostname).
	Levels []Level `json:"levels"`
	// ProductLabel is the node label naming the GPU model
	// (default nvidia.com/gpu.product).
	ProductLabel string `json:"productLabel"`
	// UnhealthyLabel, when a node carries it with any value other than
	// "false" (or, when UnhealthyValues is set, one of those values), makes
	// the node count as no capacity.
	UnhealthyLabel string `json:"unhealthyLabel"`
	// UnhealthyValues, when not empty, are the only values of
	// UnhealthyLabel that mark a node unhealthy: nvidia.com/gpu.health
	// reads "healthy" on a good node and "unhealthy" on a bad one.
	UnhealthyValues []string `json:"unhealthyValues,omitempty"`
	// UnhealthyConditions are node condition types that, when status True,
	// make the node count as no capacity (e.g. GPUUnhealthy). Ready=False or
	// Unknown always does.
	UnhealthyConditions []string `json:"unhealthyConditions"`
	// ToleratedTaints are taint keys that do not take a node out of capacity.
	// Any other NoSchedule or NoExecute taint makes the node count as no
	// capacity (PreferNoSchedule never does). Nil means the default
	// ["nvidia.com/gpu"]: the GPU operator and cloud node pools commonly taint
	// GPU nodes with it and GPU pods tolerate it. An empty, non-nil list
	// tolerates nothing.
	ToleratedTaints []string `json:"toleratedTaints"`
	// GPUMemoryMiB is each GPU resource's device memory, which maps a
	// running KAI gpu-memory pod to the share of a device it takes (the
	// authority model's gpuMemoryMiB); a pod it does not map takes whole
	// devices.
	GPUMemoryMiB GPUMemory `json:"gpuMemoryMiB,omitempty"`
	// Pools are named sets of nodes (the authority model's
	// topology.pools) a Request may be confined to: each node counts in
	// the aggregates of every pool whose selector it matches.
	Pools map[string]PoolSelector `json:"pools,omitempty"`
}

// PoolSelector selects a pool's nodes: for every node label key, the
// values the node's label may have (all keys must match; a key with no
// values matches no node). It is one NodeSelectorTerm of In expressions.
type PoolSelector map[string][]string

// Matches reports whether a node with these labels is in the pool.
func (p PoolSelector) Matches(labels map[string]string) bool {
	for k, values := range p {
		v, ok := labels[k]
		if !ok || !slices.Contains(values, v) {
			return false
		}
	}
	return true
}

// Request asks where a gang of Pods × GPUsPerPod of Resource (optionally of
// one Product) could be placed, with all pods inside one domain of
// RequiredLevel (empty: anywhere in the cluster) and, when it fits, inside
// one domain of PreferredLevel. Resource "" means nvidia.com/gpu and Product
// "" any product; PreferredLevel may not be wider than RequiredLevel.
type Request struct {
	Pods           int    `json:"pods"`
	GPUsPerPod     int    `json:"gpusPerPod"`
	Resource       string `json:"resource"`
	Product        string `json:"product"`
	RequiredLevel  string `json:"requiredLevel"`
	PreferredLevel string `json:"preferredLevel"`
	// GPUShareMilli, from 1 to 999, makes the pods KAI-shared: each takes
	// that many thousandths of each of its GPUsPerPod devices, and the pods
	// of the gang pack onto shared devices, MilliPerGPU/GPUShareMilli
	// (rounded down) pods per device, on one node (a device belongs to one
	// node).
	// 0 (or MilliPerGPU) means whole devices.
	GPUShareMilli int `json:"gpuShareMilli,omitempty"`
	// Pool, when set, confines the gang to the nodes of that pool of the
	// Config: every domain, free count and never-fits answer is computed
	// over the pool's nodes only. A pool no node matches holds nothing.
	Pool string `json:"pool,omitempty"`
}

// Result answers a Request. It is a pure function of the snapshot and the
// request: the same inputs always give the same Result.
type Result struct {
	// FitsNow: some domain of the required level has enough free capacity.
	FitsNow bool `json:"fitsNow"`
	// FitsEmpty: some domain of the required level could hold the gang if
	// every healthy node were empty.
	FitsEmpty bool `json:"fitsEmpty"`
	// Domain and Level of the best fit now (the preferred level when the gang
	// fits within one of its domains, else the required level); empty when it
	// does not fit now. A domain is named by the "/"-joined label values of
	// its level and the levels above ("_" for a value the nodes lack), e.g.
	// "zone-a/spine-03/leaf-051"; the whole cluster is "cluster" at level "".
	// A GPUsPerPod of 0 fits now and empty with no domain and Score 1.
	Domain string `json:"domain"`
	Level  string `json:"level"`
	// Score in (0,1]: the gang's GPUs over the chosen domain's free GPUs of
	// the wanted kind; 1 means nothing is stranded. 0 when it does not fit.
	Score float64 `json:"score"`
	// FreeAfter is the chosen domain's free GPUs left after placement.
	FreeAfter int `json:"freeAfter"`
	// Largest is the domain of the required level with the most pod slots
	// when the cluster is empty: what to name when the gang can never fit.
	// Ties go to the smaller domain key; zero when no domain has a slot.
	Largest DomainCapacity `json:"largest"`
	// BestNow is the domain of the required level with the most free pod
	// slots now: what to name when the gang does not fit yet. Ties go to the
	// smaller domain key; zero when no domain has a slot.
	BestNow DomainCapacity `json:"bestNow"`
	// ClusterFree and ClusterTotal count GPUs of the wanted kind on healthy
	// nodes.
	ClusterFree  int `json:"clusterFree"`
	ClusterTotal int `json:"clusterTotal"`
}

// DomainCapacity describes one domain's room for pods of the requested size.
type DomainCapacity struct {
	Domain string `json:"domain"`
	Level  string `json:"level"`
	// PodSlots is how many pods of GPUsPerPod fit (sum over its nodes of
	// floor(gpus/GPUsPerPod)), times the pods that share a device when
	// the request's GPUShareMilli packs several onto one.
	PodSlots int `json:"podSlots"`
	// GPUs of the wanted kind in the domain: allocatable for Largest, free
	// for BestNow.
	GPUs int `json:"gpus"`
}
