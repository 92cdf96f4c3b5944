package cluster

import (
	"context"
	"maps"
	"slices"
	"sync"

	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// devices are GPUs as DRA publishes them: the ResourceSlices and
// DeviceClasses known, and what each node's slices count
// (topology.DeviceCounter) under the authority model's DeviceClasses,
// which the topology model and the ledger are told
// (topology.Model.SetNodeDevices, ledger.SetNodeProduct).
type devices struct {
	mu      sync.Mutex
	slices  map[string]*resourcev1.ResourceSlice // by name
	classes map[string]*resourcev1.DeviceClass   // by name
	// counter counts by the classes and the model's mapping now; nil
	// until either changes (recount).
	counter *topology.DeviceCounter
	// counted are the nodes' counts as last told.
	counted map[string]topology.NodeDevices
	// resources are the DeviceClasses the model counts as GPUs, by name
	// (countedClasses).
	resources map[string]string
}

// countedClasses are the DRA DeviceClasses m counts as GPUs
// (model.Model.DeviceResource), by name.
func countedClasses(m model.Model) map[string]string {
	out := map[string]string{}
	for _, mapping := range []map[string]string{model.DefaultDeviceClasses, m.DeviceClasses} {
		for c := range mapping {
			if res, ok := m.DeviceResource(c); ok && res != "" {
				out[c] = res
			}
		}
	}
	return out
}

// UpsertSlice counts the devices a ResourceSlice publishes on its node. The
// slice is kept, not copied: it must not change afterwards.
func (s *State) UpsertSlice(ctx context.Context, sl *resourcev1.ResourceSlice) {
	s.shape.RLock()
	defer s.shape.RUnlock()
	s.dev.mu.Lock()
	defer s.dev.mu.Unlock()
	old := s.dev.slices[sl.Name]
	s.dev.slices[sl.Name] = sl
	nodes := []string{topology.SliceNode(sl)}
	if old != nil {
		nodes = append(nodes, topology.SliceNode(old))
	}
	s.recountNodes(ctx, nodes)
}

// DeleteSlice forgets a ResourceSlice: its devices count no more.
func (s *State) DeleteSlice(ctx context.Context, name string) {
	s.shape.RLock()
	defer s.shape.RUnlock()
	s.dev.mu.Lock()
	defer s.dev.mu.Unlock()
	old := s.dev.slices[name]
	if old == nil {
		return
	}
	delete(s.dev.slices, name)
	s.recountNodes(ctx, []string{topology.SliceNode(old)})
}

// UpsertDeviceClass records a DeviceClass: its selectors say which devices
// it holds; every node is counted again.
func (s *State) UpsertDeviceClass(ctx context.Context, c *resourcev1.DeviceClass) {
	s.shape.RLock()
	defer s.shape.RUnlock()
	s.dev.mu.Lock()
	defer s.dev.mu.Unlock()
	s.dev.classes[c.Name] = c
	s.dev.counter = nil
	s.recountNodes(ctx, nil)
}

// DeleteDeviceClass forgets a DeviceClass: its devices count no more.
func (s *State) DeleteDeviceClass(ctx context.Context, name string) {
	s.shape.RLock()
	defer s.shape.RUnlock()
	s.dev.mu.Lock()
	defer s.dev.mu.Unlock()
	delete(s.dev.classes, name)
	s.dev.counter = nil
	s.recountNodes(ctx, nil)
}

// NodeDevices is what the DRA ResourceSlices of each node publish, as the
// state counts them, by node; shared: callers only read it.
func (s *State) NodeDevices() map[string]topology.NodeDevices {
	s.dev.mu.Lock()
	defer s.dev.mu.Unlock()
	return maps.Clone(s.dev.counted)
}

// setDeviceResources counts every node's devices again when m counts
// other DeviceClasses as GPUs than before (New, SetModel), in the topology
// model the state has now. The caller holds shape (or owns the state).
func (s *State) setDeviceResources(ctx context.Context, m model.Model) {
	s.dev.mu.Lock()
	defer s.dev.mu.Unlock()
	if s.dev.slices == nil {
		s.dev.slices, s.dev.classes, s.dev.counted = map[string]*resourcev1.ResourceSlice{}, map[string]*resourcev1.DeviceClass{}, map[string]topology.NodeDevices{}
	}
	resources := countedClasses(m)
	if s.dev.counter != nil && maps.Equal(resources, s.dev.resources) {
		return
	}
	s.dev.resources, s.dev.counter = resources, nil
	s.recountNodes(ctx, nil)
}

// recountNodes counts the devices of the named nodes again (nil: of every
// node) and tells the topology model and the ledger what changed. The
// caller holds shape (shared or not), then dev.mu.
func (s *State) recountNodes(ctx context.Context, nodes []string) {
	if s.dev.counter == nil {
		classes := make([]*resourcev1.DeviceClass, 0, len(s.dev.classes))
		for _, c := range s.dev.classes {
			classes = append(classes, c)
		}
		resources := s.dev.resources
		counter, err := topology.NewDeviceCounter(classes, func(c string) (string, bool) { r, ok := resources[c]; return r, ok })
		if err != nil {
			log.FromContext(ctx).Error(err, "DRA DeviceClasses whose selectors do not compile count no device")
		}
		s.dev.counter = counter
		nodes = nil
	}
	byNode := map[string][]*resourcev1.ResourceSlice{}
	for _, sl := range s.dev.slices {
		if n := topology.SliceNode(sl); n != "" {
			byNode[n] = append(byNode[n], sl)
		}
	}
	if nodes == nil {
		for n := range byNode {
			nodes = append(nodes, n)
		}
		for n := range s.dev.counted {
			nodes = append(nodes, n)
		}
	}
	slices.Sort(nodes)
	for _, n := range slices.Compact(nodes) {
		if n == "" {
			continue
		}
		d := s.dev.counter.Count(ctx, byNode[n])
		if d.Empty() {
			delete(s.dev.counted, n)
		} else {
			s.dev.counted[n] = d
		}
		s.topo.SetNodeDevices(n, d)
		s.ledger.SetNodeProduct(n, s.nodeProduct(n, d))
	}
}

// nodeProduct is a node's GPU product: its label's, else its devices'.
func (s *State) nodeProduct(name string, d topology.NodeDevices) string {
	s.nodesMu.Lock()
	n := s.nodes[name]
	s.nodesMu.Unlock()
	if n != nil && n.Labels[workload.LabelProduct] != "" {
		return n.Labels[workload.LabelProduct]
	}
	return d.Product
}

// deviceProduct is the product the devices of the named node name.
func (s *State) deviceProduct(name string) string {
	s.dev.mu.Lock()
	defer s.dev.mu.Unlock()
	return s.dev.counted[name].Product
}
