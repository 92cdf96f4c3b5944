package topology

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// ClusterDomain names the one domain of the whole cluster, used when a
// Request's RequiredLevel is empty. Its level is "".
const ClusterDomain = "cluster"

// Snapshot is an immutable view of the cluster model at one generation. All
// its methods are safe for concurrent use, and its answers never change.
type Snapshot struct {
	levels    []Level
	levelIdx  map[string]int
	gen       uint64
	nodeCount int
	aggs      map[aggKey]*aggView
}

// Levels returns the configured levels, widest first.
func (s *Snapshot) Levels() []Level { return slices.Clone(s.levels) }

// NodeCount is the number of nodes known, usable or not.
func (s *Snapshot) NodeCount() int { return s.nodeCount }

// Generation counts the model changes this snapshot reflects: two snapshots
// of one Model with the same generation give the same answers.
func (s *Snapshot) Generation() uint64 { return s.gen }

// Build returns the snapshot of a cluster given all at once: a convenience
// for tests, tools and the first list before informer events take over.
func Build(cfg Config, nodes []corev1.Node, pods []corev1.Pod) (*Snapshot, error) {
	m, err := NewModel(cfg)
	if err != nil {
		return nil, fmt.Errorf("unable to build topology snapshot: %w", err)
	}
	for i := range nodes {
		m.UpsertNode(&nodes[i])
	}
	for i := range pods {
		m.UpsertPod(&pods[i])
	}
	return m.Snapshot(), nil
}
