// Package topologytest generates the reference GPU cluster that benchmarks,
// load tests and demos share: by default 12,500 nodes × 8 GPUs (100k GPUs) in
// two zones, spine blocks of 16 leaf blocks, leaf blocks of 32 nodes, NVLink
// cliques of 4 nodes, two GPU products, about 60% of the GPUs taken by pods
// of 1,000 tenants. The same options always give the same objects.
package topologytest

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// Node labels of the reference cluster. The spine and leaf block labels are
// Mandate's own; on a cloud they would be e.g. AWS's
// topology.k8s.aws/network-node-layer-{1,2} or GKE's
// cloud.google.com/gce-topology-{block,subblock}.
const (
	LabelZone       = "topology.kubernetes.io/zone"
	LabelSpineBlock = "mandate.dev/spine-block"
	LabelLeafBlock  = "mandate.dev/leaf-block"
	LabelClique     = "nvidia.com/gpu.clique"
	LabelHostname   = "kubernetes.io/hostname"
	LabelProduct    = topology.DefaultProductLabel
	LabelGPUCount   = "nvidia.com/gpu.count"
)

// Shape and products of the reference cluster.
const (
	DefaultNodeCount    = 12500
	DefaultBusyFraction = 0.6
	DefaultTenants      = 1000
	GPUsPerNode         = 8
	NodesPerLeaf        = 32
	LeavesPerSpine      = 16
	NodesPerClique      = 4
	Zones               = 2
	// ProductH100 is on most spines; ProductB200 on every fifth.
	ProductH100 = "NVIDIA-H100-80GB-HBM3"
	ProductB200 = "NVIDIA-B200"
	// GPUResource is the resource every node offers.
	GPUResource = topology.DefaultGPUResource
)

// RefOptions sizes the reference cluster; zero values take the defaults.
type RefOptions struct {
	// NodeCount of 8-GPU nodes (default 12,500).
	NodeCount int
	// Seed of the random choices (which GPUs are busy, by which tenant).
	Seed uint64
	// BusyFraction of the GPUs taken by pods (default 0.6); negative for an
	// empty cluster.
	BusyFraction float64
	// Tenants is the number of tenant namespaces (default 1,000).
	Tenants int
}

func (o RefOptions) withDefaults() RefOptions {
	if o.NodeCount <= 0 {
		o.NodeCount = DefaultNodeCount
	}
	switch {
	case o.BusyFraction == 0:
		o.BusyFraction = DefaultBusyFraction
	case o.BusyFraction < 0:
		o.BusyFraction = 0
	case o.BusyFraction > 1:
		o.BusyFraction = 1
	}
	if o.Tenants <= 0 {
		o.Tenants = DefaultTenants
	}
	return o
}

// ReferenceLevels are the reference cluster's levels, widest first: zone,
// spine, block, clique, node.
func ReferenceLevels() []topology.Level {
	return []topology.Level{
		{Name: "zone", NodeLabel: LabelZone},
		{Name: "spine", NodeLabel: LabelSpineBlock},
		{Name: "block", NodeLabel: LabelLeafBlock},
		{Name: "clique", NodeLabel: LabelClique},
		{Name: "node", NodeLabel: LabelHostname},
	}
}

// Reference returns the reference cluster's nodes, the pods bound to them
// and the tenants' namespaces. Half the nodes are taken whole or not at all
// (as by 8-GPU training pods), the others partly (by 1-, 2- and 4-GPU pods),
// so both whole free nodes and fragments exist.
func Reference(opts RefOptions) (nodes []corev1.Node, pods []corev1.Pod, namespaces []corev1.Namespace) {
	opts = opts.withDefaults()
	rng := rand.New(rand.NewPCG(opts.Seed, 0x6d616e64617465)) // "mandate"
	namespaces = make([]corev1.Namespace, opts.Tenants)
	for i := range namespaces {
		name := tenantName(i)
		namespaces[i] = corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{workload.LabelTenant: name}}}
	}
	leaves := (opts.NodeCount + NodesPerLeaf - 1) / NodesPerLeaf
	spines := (leaves + LeavesPerSpine - 1) / LeavesPerSpine
	nodes = make([]corev1.Node, opts.NodeCount)
	pods = make([]corev1.Pod, 0, opts.NodeCount*2)
	for i := range nodes {
		leaf := i / NodesPerLeaf
		spine := leaf / LeavesPerSpine
		nodes[i] = referenceNode(i, spine, spines, leaf)
		for _, gpus := range busyPods(rng, opts.BusyFraction) {
			pods = append(pods, referencePod(len(pods), namespaces[rng.IntN(len(namespaces))].Name, nodes[i].Name, gpus))
		}
	}
	return nodes, pods, namespaces
}

func tenantName(i int) string { return fmt.Sprintf("tenant-%04d", i) }

// busyPods returns the GPU counts of the pods on one node.
func busyPods(rng *rand.Rand, busy float64) []int {
	if rng.IntN(2) == 0 {
		if rng.Float64() < busy {
			return []int{GPUsPerNode}
		}
		return nil
	}
	used := 0
	for range GPUsPerNode {
		if rng.Float64() < busy {
			used++
		}
	}
	var out []int
	for used > 0 {
		size := []int{1, 2, 4}[rng.IntN(3)]
		for size > used {
			size /= 2
		}
		out = append(out, size)
		used -= size
	}
	return out
}

func referenceNode(i, spine, spines, leaf int) corev1.Node {
	name := fmt.Sprintf("gpu-%05d", i)
	product := ProductH100
	if spine%5 == 4 {
		product = ProductB200
	}
	zone := fmt.Sprintf("zone-%c", 'a'+rune(spine*Zones/spines))
	gpus := *resource.NewQuantity(GPUsPerNode, resource.DecimalSI)
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("192"),
		corev1.ResourceMemory: resource.MustParse("2Ti"),
		corev1.ResourcePods:   resource.MustParse("110"),
		GPUResource:           gpus,
	}
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			LabelHostname:   name,
			LabelZone:       zone,
			LabelSpineBlock: fmt.Sprintf("spine-%02d", spine),
			LabelLeafBlock:  fmt.Sprintf("leaf-%03d", leaf),
			LabelClique:     fmt.Sprintf("nvl-%03d.%d", leaf, (i%NodesPerLeaf)/NodesPerClique),
			LabelProduct:    product,
			LabelGPUCount:   strconv.Itoa(GPUsPerNode),
		}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: GPUResource, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:    res,
			Allocatable: res.DeepCopy(),
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

func referencePod(i int, namespace, node string, gpus int) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("worker-%06d", i)},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name:  "main",
				Image: "registry.example.com/train:1",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
					Limits:   corev1.ResourceList{GPUResource: *resource.NewQuantity(int64(gpus), resource.DecimalSI)},
				},
			}},
			Tolerations: []corev1.Toleration{{Key: GPUResource, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}
