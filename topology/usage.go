package topology

import (
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

// A pod uses GPUs in three ways: extended resources (IsGPUResource: whole
// GPUs, MIG slices, time-sliced replicas), KAI's sharing annotations (a
// fraction or GPU memory of a device, PodShare) and the devices of the
// DRA ResourceClaims it references (ClaimGPUs). PodUsage counts all
// three, and every consumer reads a pod's GPUs through it: admission's
// normaliser (the extended-resource part of a template), the quota ledger,
// the topology model's node occupancy, audit, explain and the cluster
// report. This is a pod's usage, not a hold: a hold (the ledger's) is what
// a stored, admitted workload keeps of its tenant's quota for its life
// (docs/architecture.md, Glossary).

// ClaimLookup resolves a ResourceClaim a pod references, by namespace and
// name; ok is false when it is not known (not made yet, or not listed).
type ClaimLookup func(namespace, name string) (claim *resourcev1.ResourceClaim, ok bool)

// Counting is what counting a pod's GPUs reads of the authority model.
type Counting struct {
	// GPUMemory maps a gpu-memory pod to its share of a device.
	GPUMemory GPUMemory
	// DeviceResource maps a DRA DeviceClass to the quota resource its
	// devices count as (model.Model.DeviceResource); nil counts no device.
	DeviceResource DeviceResourceFunc
}

// Usage is every GPU a pod uses.
type Usage struct {
	// GPUs counts, by quota key, the whole devices of each GPU resource
	// (its extended resources and the devices of the claims in Claims) and
	// KAI-shared demand in milli-GPUs under SharedKey(SharedResource); nil
	// when the pod uses none.
	GPUs map[string]int
	// Share is what the pod takes by KAI's sharing annotations (zero when
	// nothing), counted in GPUs.
	Share Share
	// Claims are the DRA claims the pod references that the lookup
	// resolved and that have counted devices, by name.
	Claims []ClaimUsage
}

// ClaimUsage is what one DRA claim's devices count.
type ClaimUsage struct {
	Namespace, Name string
	// Node is the node its devices are allocated on (ClaimNode); "" when
	// not allocated or not node-local (they are then on its pod's node).
	Node string
	// GPUs are its devices by quota resource (ClaimGPUs).
	GPUs map[string]int
}

// PodUsage is every GPU pod uses: its extended resources as the
// scheduler counts them (the larger of the app containers plus sidecars and
// the largest init container), its KAI share (a gpu-memory share mapped
// with the device memory of product, "" for the resource's default), and
// the devices of each claim lookup resolves (nil: none). A claim several
// pods share is in each one's Usage: callers that sum pods count it
// once (ClaimsOnce).
func PodUsage(pod *corev1.Pod, product string, c Counting, claims ClaimLookup) Usage {
	h := podUsage(podGPURequests(pod), pod.Annotations, product, c)
	if claims != nil && c.DeviceResource != nil {
		for _, name := range PodClaimNames(pod) {
			claim, ok := claims(pod.Namespace, name)
			if !ok {
				continue
			}
			gpus := ClaimGPUs(claim, c.DeviceResource)
			if len(gpus) == 0 {
				continue
			}
			h.Claims = append(h.Claims, ClaimUsage{Namespace: pod.Namespace, Name: name, Node: ClaimNode(claim), GPUs: gpus})
			for res, n := range gpus {
				h.add(res, n)
			}
		}
	}
	return h
}

// podUsage is what a pod of the given GPUs (podGPURequests) and
// annotations uses without its claims: gpus, and its KAI share. gpus is
// not changed.
func podUsage(gpus map[string]int, annotations map[string]string, product string, c Counting) Usage {
	h := Usage{GPUs: gpus}
	if share, ok := PodShare(annotations, product, c.GPUMemory); ok {
		h.GPUs = maps.Clone(gpus)
		h.Share = share
		h.add(SharedKey(SharedResource), share.Total())
	}
	return h
}

func (h *Usage) add(key string, n int) {
	if n <= 0 {
		return
	}
	if h.GPUs == nil {
		h.GPUs = make(map[string]int, 1)
	}
	h.GPUs[key] += n
}

// ByKey is h.GPUs under the ledger's keys: per resource and, when product
// is set, per resource and product too (WithProduct).
func (h Usage) ByKey(product string) map[string]int { return WithProduct(h.GPUs, product) }

// Whole is h.GPUs with shared milli-GPUs folded into their device
// resource, rounded up to whole GPUs (Fold): what a person reads.
func (h Usage) Whole() map[string]int { return Fold(h.GPUs) }

// OnNode is what h occupies of each node when the pod is bound to node
// ("" while pending): its own GPUs there, and each claim's devices on the
// claim's node, else there.
func (h Usage) OnNode(node string) map[string]map[string]int {
	out := map[string]map[string]int{}
	add := func(n, res string, v int) {
		if n == "" || v <= 0 {
			return
		}
		if out[n] == nil {
			out[n] = map[string]int{}
		}
		out[n][res] += v
	}
	own := h.GPUs
	if len(h.Claims) > 0 {
		own = make(map[string]int, len(h.GPUs))
		for res, v := range h.GPUs {
			own[res] = v
		}
		for _, c := range h.Claims {
			for res, v := range c.GPUs {
				own[res] -= v
				n := c.Node
				if n == "" {
					n = node
				}
				add(n, res, v)
			}
		}
	}
	for res, v := range own {
		add(node, res, v)
	}
	return out
}

// ClaimsOnce wraps lookup so that each claim resolves once: for callers
// that sum the usage of many pods, a claim several pods share counts
// for the first of them only.
func ClaimsOnce(lookup ClaimLookup) ClaimLookup {
	if lookup == nil {
		return nil
	}
	seen := map[string]bool{}
	return func(namespace, name string) (*resourcev1.ResourceClaim, bool) {
		key := namespace + "/" + name
		if seen[key] {
			return nil, false
		}
		c, ok := lookup(namespace, name)
		if ok {
			seen[key] = true
		}
		return c, ok
	}
}

// nodeNameField is the field a node-local allocation's node selector
// matches the node by.
const nodeNameField = "metadata.name"

// ClaimNode is the node an allocated claim's devices are on: the node
// its allocation's node selector names (the scheduler sets one for
// node-local devices); "" when not allocated or not node-local.
func ClaimNode(c *resourcev1.ResourceClaim) string {
	a := c.Status.Allocation
	if a == nil || a.NodeSelector == nil {
		return ""
	}
	for _, term := range a.NodeSelector.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == nodeNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// ProductSep joins a GPU resource and a GPU product in a usage key.
// Neither a resource name (a qualified name) nor a label value may
// contain it, nor SharedSuffix's "#".
const ProductSep = "@"

// ProductKey is the usage and reservation key of resource's GPUs of one
// GPU product (the node label nvidia.com/gpu.product):
// "nvidia.com/gpu@NVIDIA-H100-80GB-HBM3".
func ProductKey(resource, product string) string {
	return resource + ProductSep + product
}

// IsProductKey says whether a usage key is a ProductKey, of whole GPUs or
// of shared ones (a ProductKey's SharedKey).
func IsProductKey(key string) bool {
	key, _ = strings.CutSuffix(key, SharedSuffix)
	return strings.Contains(key, ProductSep)
}

// ProductKeyOf is the key under which key's GPUs count for product: the
// resource's ProductKey, and for shared demand (SharedKey) that
// ProductKey's SharedKey, so a product's quota counts the fractions and
// GPU memory its devices are shared by; "" for a key that is a product's
// already.
func ProductKeyOf(key, product string) string {
	base, shared := strings.CutSuffix(key, SharedSuffix)
	if strings.Contains(base, ProductSep) {
		return ""
	}
	if shared {
		return SharedKey(ProductKey(base, product))
	}
	return ProductKey(base, product)
}

// WithProduct returns gpus (GPUs per resource) with, when product is set,
// the same GPUs under each resource's ProductKey.
func WithProduct(gpus map[string]int, product string) map[string]int {
	out := make(map[string]int, 2*len(gpus))
	for res, n := range gpus {
		out[res] += n
		if product == "" {
			continue
		}
		if k := ProductKeyOf(res, product); k != "" {
			out[k] += n
		}
	}
	return out
}

// Fold is gpus with the milli-GPUs under each SharedKey moved into its
// device resource, rounded up to whole GPUs; nil when gpus is empty. gpus
// is not changed.
func Fold(gpus map[string]int) map[string]int {
	if len(gpus) == 0 {
		return nil
	}
	out := make(map[string]int, len(gpus))
	for key, n := range gpus {
		if base, ok := strings.CutSuffix(key, SharedSuffix); ok {
			out[base] += WholeGPUs(n)
		} else {
			out[key] += n
		}
	}
	return out
}
