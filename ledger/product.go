package ledger

import (
	"github.com/mandate-dev/mandate/topology"
)

// ProductKey is the usage and reservation key of resource's GPUs of one
// GPU product (the node label nvidia.com/gpu.product):
// "nvidia.com/gpu@NVIDIA-H100-80GB-HBM3" (topology.ProductKey, the one
// key scheme). The ledger counts a pod's GPUs under the resource's key
// (every product together) and, when the pod has a product, under this
// key too, so input.usage answers both the resource's quota and each
// product's.
func ProductKey(resource, product string) string { return topology.ProductKey(resource, product) }

// IsProductKey says whether a usage key is a ProductKey, of whole GPUs or
// of shared ones (a ProductKey's SharedKey).
func IsProductKey(key string) bool { return topology.IsProductKey(key) }

// productKeyOf is the key under which key's GPUs count for product
// (topology.ProductKeyOf); "" for a key that is a product's already.
func productKeyOf(key, product string) string { return topology.ProductKeyOf(key, product) }

// WithProduct returns gpus (GPUs per resource) with, when product is set,
// the same GPUs under each resource's ProductKey: what a workload of that
// product reserves and what its pods consume (topology.WithProduct).
func WithProduct(gpus map[string]int, product string) map[string]int {
	return topology.WithProduct(gpus, product)
}

// SetNodeProduct records the GPU product of a node ("" for none or a
// deleted node): a pod that asks for no product counts against the
// product of the node it is bound to. The node's pods are recounted when
// its product changed.
func (l *Ledger) SetNodeProduct(node, product string) {
	// Most node updates (status heartbeats) change no label: read first.
	l.mu.RLock()
	same := l.nodeProduct[node] == product
	l.mu.RUnlock()
	if same {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nodeProduct[node] == product {
		return
	}
	for key := range l.onNode[node] {
		e := l.pods[key]
		l.apply(l.nsTenant[e.namespace], e, -1)
	}
	if product == "" {
		delete(l.nodeProduct, node)
	} else {
		l.nodeProduct[node] = product
	}
	for key := range l.onNode[node] {
		e := l.pods[key]
		l.apply(l.nsTenant[e.namespace], e, +1)
	}
}

// counted is what a pod entry counts: its GPUs per resource and per
// resource and product, the product being the one it asked for, else its
// node's. Callers hold the lock.
func (l *Ledger) counted(e podEntry) topology.Counts {
	product := e.product
	if product == "" && e.node != "" {
		product = l.nodeProduct[e.node]
	}
	if product == "" {
		return e.gpus
	}
	return withProduct(e.gpus, product)
}

// withProduct is WithProduct of Counts.
func withProduct(gpus topology.Counts, product string) topology.Counts {
	if product == "" {
		return gpus
	}
	out := make(topology.Counts, 0, 2*len(gpus))
	for _, c := range gpus {
		out = append(out, c)
		if k := productKeyOf(c.Resource, product); k != "" {
			out = append(out, topology.Count{Resource: k, N: c.N})
		}
	}
	if len(out) > 2 {
		return topology.CountsOf(out.Map())
	}
	return out
}

// index adds (sign +1) or removes (-1) the pod of key from its node's
// pods. Callers hold the lock.
func (l *Ledger) index(key string, e podEntry, sign int) {
	if e.node == "" || e.product != "" {
		return
	}
	pods := l.onNode[e.node]
	if sign > 0 {
		if pods == nil {
			pods = map[string]struct{}{}
			l.onNode[e.node] = pods
		}
		pods[key] = struct{}{}
		return
	}
	delete(pods, key)
	if len(pods) == 0 {
		delete(l.onNode, e.node)
	}
}
