// Package cluster is the cluster as Mandate sees it when deciding: the
// topology model (free GPUs per domain), the quota ledger (GPUs per tenant)
// and the namespaces with their labels. It is fed object by object, from a
// snapshot file (`kubectl get nodes,pods,namespaces -A -o yaml`) or from
// informers, and hands the evaluator what one decision needs.
package cluster

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// State is safe for concurrent use: informer events write, admissions read.
type State struct {
	// shape guards topo (the pointer) and nodes against SetModel: events
	// and reads hold it shared, a reshape exclusively.
	shape sync.RWMutex
	topo  *topology.Model
	// nodes are the nodes as last seen (the informers' own objects, never
	// changed), to rebuild the topology model for new levels; nodesMu
	// guards the map.
	nodesMu sync.Mutex
	nodes   map[string]*corev1.Node
	ledger  *ledger.Ledger
	// topoCfg and ledgerCfg are what the state is shaped by now.
	topoCfg   topology.Config
	ledgerCfg ledger.Config

	mu         sync.RWMutex
	namespaces map[string]map[string]string
	// window is the reservations' confirmation window (SetConfirmationWindow).
	window time.Duration
	// shared, when set, keeps reservations in TenantLedger objects
	// (ShareReservations).
	shared *shared
	// claims are the DRA claims of a snapshot file (Claims).
	claims ClaimStore
	// claimsMu guards draClaims, the ResourceClaims counted as running
	// usage (UpsertClaim), and the model's DRA mapping they are counted by.
	claimsMu       sync.Mutex
	draClaims      map[string]*resourcev1.ResourceClaim
	draTemplates   map[string]*resourcev1.ResourceClaimTemplate
	deviceClasses  map[string]string
	deviceResource topology.DeviceResourceFunc
	// dev are GPUs as DRA ResourceSlices publish them (devices.go).
	dev devices
	// handlers say whether Watch's event handlers have taken in their
	// informers' first listings (Synced).
	handlers []func() bool
}

// Claims reads the DRA claims and claim templates the state was loaded
// with from a snapshot file (none from informers: serve reads them
// through its cache).
func (s *State) Claims() *ClaimStore { return &s.claims }

// New returns an empty State for an authority model: its topology levels
// and health rules shape the cluster model, its tenants and tiers the
// ledger.
func New(m model.Model) (*State, error) {
	topoCfg := m.TopologyConfig()
	topo, err := topology.NewModel(topoCfg)
	if err != nil {
		return nil, fmt.Errorf("unable to build the cluster model: %w", err)
	}
	cfg := ledger.Config{Parents: m.Parents(), PreemptibleClasses: m.PreemptibleClasses(), GPUMemory: m.GPUMemoryMiB}
	s := &State{
		topo:       topo,
		nodes:      map[string]*corev1.Node{},
		ledger:     ledger.New(cfg),
		topoCfg:    topoCfg,
		ledgerCfg:  cfg,
		namespaces: map[string]map[string]string{},
	}
	s.setDeviceClasses(m)
	s.setDeviceResources(context.Background(), m)
	return s, nil
}

// SetModel reshapes the state for a new authority model: the topology
// model is rebuilt for its levels and health rules (when they changed) from the nodes and
// pods known, and the ledger recounts every pod and reservation under its
// tenant tree and tiers. Events wait meanwhile; nothing is lost. On an
// error (levels the topology model refuses) the state is left as it was.
func (s *State) SetModel(m model.Model) error {
	s.shape.Lock()
	defer s.shape.Unlock()
	topoCfg := m.TopologyConfig()
	if !reflect.DeepEqual(s.topoCfg, topoCfg) {
		s.nodesMu.Lock()
		nodes := make([]*corev1.Node, 0, len(s.nodes))
		for _, n := range s.nodes {
			nodes = append(nodes, n)
		}
		s.nodesMu.Unlock()
		topo, err := s.topo.Reconfigure(topoCfg, nodes)
		if err != nil {
			return fmt.Errorf("unable to rebuild the cluster model: %w", err)
		}
		s.topo, s.topoCfg = topo, topoCfg
	}
	cfg := ledger.Config{Parents: m.Parents(), PreemptibleClasses: m.PreemptibleClasses(), GPUMemory: m.GPUMemoryMiB}
	if !maps.Equal(s.ledgerCfg.Parents, cfg.Parents) || !maps.Equal(s.ledgerCfg.PreemptibleClasses, cfg.PreemptibleClasses) ||
		!reflect.DeepEqual(s.ledgerCfg.GPUMemory, cfg.GPUMemory) {
		s.ledger.SetConfig(cfg)
		s.ledgerCfg = cfg
	}
	s.setDeviceClasses(m)
	s.setDeviceResources(context.TODO(), m)
	return nil
}

// UpsertNode records a node's capacity and topology labels. The node is
// kept, not copied: it must not change afterwards (informers' objects
// never do).
func (s *State) UpsertNode(n *corev1.Node) {
	s.shape.RLock()
	defer s.shape.RUnlock()
	s.nodesMu.Lock()
	s.nodes[n.Name] = n
	s.topo.UpsertNode(n)
	s.nodesMu.Unlock()
	product := n.Labels[topology.DefaultProductLabel]
	if product == "" {
		product = s.deviceProduct(n.Name) // the product its DRA devices name
	}
	s.ledger.SetNodeProduct(n.Name, product)
}

// DeleteNode forgets a node.
func (s *State) DeleteNode(name string) {
	s.shape.RLock()
	defer s.shape.RUnlock()
	s.nodesMu.Lock()
	delete(s.nodes, name)
	s.topo.DeleteNode(name)
	s.nodesMu.Unlock()
	s.ledger.SetNodeProduct(name, "")
}

// UpsertPod counts a pod against its node and its tenant.
func (s *State) UpsertPod(p *corev1.Pod) {
	s.shape.RLock()
	defer s.shape.RUnlock()
	s.topo.UpsertPod(p)
	s.ledger.UpsertPod(p)
}

// UpsertFacts counts a pod the informers keep as facts (CompactPod), as
// UpsertPod counts the whole pod, without building one from them.
func (s *State) UpsertFacts(f *PodFacts) {
	c := f.Counted()
	s.shape.RLock()
	defer s.shape.RUnlock()
	s.topo.UpsertCounted(&c)
	s.ledger.UpsertCounted(&c)
}

// DeletePod stops counting a pod.
func (s *State) DeletePod(namespace, name string) {
	s.shape.RLock()
	defer s.shape.RUnlock()
	s.topo.DeletePod(namespace, name)
	s.ledger.DeletePod(namespace, name)
}

// UpsertNamespace records a namespace's labels (its tenant among them).
func (s *State) UpsertNamespace(ns *corev1.Namespace) {
	labels := make(map[string]string, len(ns.Labels))
	for k, v := range ns.Labels {
		labels[k] = v
	}
	s.mu.Lock()
	s.namespaces[ns.Name] = labels
	s.mu.Unlock()
	s.ledger.UpsertNamespace(ns)
}

// DeleteNamespace forgets a namespace.
func (s *State) DeleteNamespace(name string) {
	s.mu.Lock()
	delete(s.namespaces, name)
	s.mu.Unlock()
	s.ledger.DeleteNamespace(name)
}

// Namespace returns what the policy sees of a namespace; an unknown one has
// no labels (and so no tenant).
func (s *State) Namespace(name string) workload.Namespace {
	ns, _ := s.LookupNamespace(name)
	return ns
}

// LookupNamespace is Namespace, and whether the state has seen the
// namespace at all.
func (s *State) LookupNamespace(name string) (workload.Namespace, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	labels, ok := s.namespaces[name]
	return workload.Namespace{Name: name, Labels: labels}, ok
}

// Snapshot is the current topology snapshot, immutable.
func (s *State) Snapshot() *topology.Snapshot {
	s.shape.RLock()
	defer s.shape.RUnlock()
	return s.topo.Snapshot()
}

// Usage is the rolled-up GPU usage of a tenant and its ancestors.
func (s *State) Usage(tenant string) map[string]map[string]ledger.Usage {
	if tenant == "" {
		return nil
	}
	return s.ledger.Usage(tenant)
}

// UsageExcluding is Usage without the pods of the gang whose owner has UID
// ownerUID (ledger.GangOwnerOf): with Usage, what those pods count.
func (s *State) UsageExcluding(tenant, ownerUID string) map[string]map[string]ledger.Usage {
	return s.usage(tenant, ownerUID)
}

// TopologyConfig is the cluster-model configuration the state is shaped by
// now (levels and health rules).
func (s *State) TopologyConfig() topology.Config {
	s.shape.RLock()
	defer s.shape.RUnlock()
	return s.topoCfg
}

// Nodes returns the nodes as last seen, sorted by name. They are shared:
// callers must not change them.
func (s *State) Nodes() []*corev1.Node {
	s.nodesMu.Lock()
	out := make([]*corev1.Node, 0, len(s.nodes))
	for _, n := range s.nodes {
		out = append(out, n)
	}
	s.nodesMu.Unlock()
	slices.SortFunc(out, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// TenantNamespaces lists, sorted, the namespaces labelled with tenant under
// label (mandate.dev/tenant).
func (s *State) TenantNamespaces(label, tenant string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for name, labels := range s.namespaces {
		if labels[label] == tenant {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
