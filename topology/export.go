package topology

import corev1 "k8s.io/api/core/v1"

// PodGPURequests returns what a pod takes of each GPU extended resource,
// the way the scheduler counts it (see podGPURequests); nil when nothing.
// It is the extended-resource part of PodUsage, for callers that keep
// a pod's parts apart (the informers' PodFacts keep its extended resources
// beside its sharing annotations and claim names; admission's normaliser
// validates a template's share on its own): what a pod uses is
// PodUsage.
func PodGPURequests(pod *corev1.Pod) map[string]int { return podGPURequests(pod) }

// NodeGPUs returns the node's allocatable GPUs by resource; nil when none.
func NodeGPUs(node *corev1.Node) map[string]int { return gpuAllocatable(node) }

// NodeView is what the cluster model makes of one node: its domain key at
// each level, its GPU product, and whether it may take new pods.
type NodeView struct {
	// Keys holds the node's domain key per level ("" when it lacks the
	// level's label), in the order of Config.Levels.
	Keys    []string
	Product string
	// Usable is false for a cordoned, NotReady, untolerated-tainted or
	// unhealthy (label or condition) node.
	Usable bool
	// Unhealthy is true when the unhealthy label or an unhealthy condition
	// marks the node (a subset of !Usable).
	Unhealthy bool
}

// ViewNode tells how cfg (defaulted, not validated) sees node: the view the
// placement builtin uses, for reports that must agree with it.
func ViewNode(cfg Config, node *corev1.Node) NodeView {
	r := newRules(cfg.WithDefaults())
	keys, _ := domainKeys(r.levels, node.Name, node.Labels)
	return NodeView{Keys: keys, Product: node.Labels[r.productLabel], Usable: r.usable(node), Unhealthy: r.unhealthy(node)}
}
