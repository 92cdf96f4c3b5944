// Package cluster is the cluster as Mandate sees it when deciding: the
// topology model (free GPUs per domain), the quota ledger (GPUs per tenant)
// and the namespaces with their labels. It is fed object by object, from a
// snapshot file (`kubectl get nodes,pods,namespaces -A -o yaml`) or from
// informers, and hands the evaluator what one decision needs.
package cluster

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/topology"
)

// State is safe for concurrent use: informer events write, admissions read.
type State struct {
	topo   *topology.Model
	ledger *ledger.Ledger

	mu         sync.RWMutex
	namespaces map[string]map[string]string
}

// New returns an empty State for an authority model: its topology levels
// shape the cluster model, its tenants and tiers the ledger.
func New(m evaluator.Model) (*State, error) {
	topo, err := topology.NewModel(topology.Config{Levels: m.Topology.Levels})
	if err != nil {
		return nil, fmt.Errorf("unable to build the cluster model: %w", err)
	}
	return &State{
		topo:       topo,
		ledger:     ledger.New(ledger.Config{Parents: m.Parents(), PreemptibleClasses: m.PreemptibleClasses()}),
		namespaces: map[string]map[string]string{},
	}, nil
}

// UpsertNode records a node's capacity and topology labels.
func (s *State) UpsertNode(n *corev1.Node) { s.topo.UpsertNode(n) }

// DeleteNode forgets a node.
func (s *State) DeleteNode(name string) { s.topo.DeleteNode(name) }

// UpsertPod counts a pod against its node and its tenant.
func (s *State) UpsertPod(p *corev1.Pod) {
	s.topo.UpsertPod(p)
	s.ledger.UpsertPod(p)
}

// DeletePod stops counting a pod.
func (s *State) DeletePod(namespace, name string) {
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
func (s *State) Namespace(name string) evaluator.Namespace {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return evaluator.Namespace{Name: name, Labels: s.namespaces[name]}
}

// Snapshot is the current topology snapshot, immutable.
func (s *State) Snapshot() *topology.Snapshot { return s.topo.Snapshot() }

// Usage is the rolled-up GPU usage of a tenant and its ancestors.
func (s *State) Usage(tenant string) map[string]map[string]ledger.Usage {
	if tenant == "" {
		return nil
	}
	return s.ledger.Usage(tenant)
}

// LockTenantTree serialises admissions of one tenant tree between reading
// usage and reserving; call the returned function to unlock.
func (s *State) LockTenantTree(tenant string) func() { return s.ledger.LockTree(tenant) }

// Release drops the reservation of key, if any.
func (s *State) Release(key string) { s.ledger.Release(key) }

// Reserve counts an admitted workload's GPUs until its pods are seen.
func (s *State) Reserve(key, tenant string, gpus map[string]int, preemptible bool) {
	s.ledger.Reserve(key, tenant, gpus, preemptible, ledger.DefaultReservationTTL)
}
