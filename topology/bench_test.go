package topology_test

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/topology/topologytest"
)

var benchSizes = []int{1000, topologytest.DefaultNodeCount}

type refCluster struct {
	nodes []corev1.Node
	pods  []corev1.Pod
	snap  *topology.Snapshot
}

var (
	refMu       sync.Mutex
	refClusters = map[int]*refCluster{}
)

// reference returns the reference cluster of n nodes, built once per run.
func reference(b *testing.B, n int) *refCluster {
	b.Helper()
	refMu.Lock()
	defer refMu.Unlock()
	if c := refClusters[n]; c != nil {
		return c
	}
	nodes, pods, _ := topologytest.Reference(topologytest.RefOptions{NodeCount: n, Seed: 1})
	snap, err := topology.Build(topology.Config{Levels: topologytest.ReferenceLevels()}, nodes, pods)
	if err != nil {
		b.Fatal(err)
	}
	c := &refCluster{nodes: nodes, pods: pods, snap: snap}
	refClusters[n] = c
	return c
}

func BenchmarkPlace(b *testing.B) {
	h100 := topologytest.ProductH100
	for _, tc := range []struct {
		name string
		req  topology.Request
	}{
		{"node/1x4", topology.Request{Pods: 1, GPUsPerPod: 4, Product: h100, RequiredLevel: "node"}},
		{"clique/4x8", topology.Request{Pods: 4, GPUsPerPod: 8, Product: h100, RequiredLevel: "clique"}},
		{"clique/2x8", topology.Request{Pods: 2, GPUsPerPod: 8, RequiredLevel: "clique"}},
		{"block/16x8", topology.Request{Pods: 16, GPUsPerPod: 8, Product: h100, RequiredLevel: "block"}},
		{"block/8x2", topology.Request{Pods: 8, GPUsPerPod: 2, Product: h100, RequiredLevel: "block"}},
		{"spine/64x8", topology.Request{Pods: 64, GPUsPerPod: 8, Product: h100, RequiredLevel: "spine"}},
		{"zone/256x8", topology.Request{Pods: 256, GPUsPerPod: 8, RequiredLevel: "zone"}},
		{"cluster/512x8", topology.Request{Pods: 512, GPUsPerPod: 8}},
		{"spine-prefer-block/8x8", topology.Request{Pods: 8, GPUsPerPod: 8, Product: h100,
			RequiredLevel: "spine", PreferredLevel: "block"}},
		{"block-never/33x8", topology.Request{Pods: 33, GPUsPerPod: 8, Product: h100, RequiredLevel: "block"}},
	} {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/nodes=%d", tc.name, n), func(b *testing.B) {
				snap := reference(b, n).snap
				res, err := snap.Place(tc.req)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					_, _ = snap.Place(tc.req)
				}
				b.ReportMetric(boolMetric(res.FitsNow), "fits")
			})
		}
	}
}

func boolMetric(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// BenchmarkModelUpdate measures one pod event (a 2-GPU pod bound, or the
// same pod deleted, on a node moving across the cluster) plus the snapshot a
// query would take after it.
func BenchmarkModelUpdate(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			c := reference(b, n)
			m, err := topology.NewModel(topology.Config{Levels: topologytest.ReferenceLevels()})
			if err != nil {
				b.Fatal(err)
			}
			for i := range c.nodes {
				m.UpsertNode(&c.nodes[i])
			}
			for i := range c.pods {
				m.UpsertPod(&c.pods[i])
			}
			pod := gpuPod("bench", "", 2)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i%2 == 0 {
					pod.Spec.NodeName = c.nodes[(i*7919)%len(c.nodes)].Name
					m.UpsertPod(&pod)
				} else {
					m.DeletePod(pod.Namespace, pod.Name)
				}
				_ = m.Snapshot()
				i++
			}
		})
	}
}

// BenchmarkBuild measures building a snapshot from a full list of nodes and
// pods, as at start-up.
func BenchmarkBuild(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			c := reference(b, n)
			cfg := topology.Config{Levels: topologytest.ReferenceLevels()}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := topology.Build(cfg, c.nodes, c.pods); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
