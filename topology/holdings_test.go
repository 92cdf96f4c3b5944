package topology_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/topology/topologytest"
)

// lookup resolves claims from a list.
func lookup(claims ...*resourcev1.ResourceClaim) topology.ClaimLookup {
	return func(namespace, name string) (*resourcev1.ResourceClaim, bool) {
		for _, c := range claims {
			if c.Namespace == namespace && c.Name == name {
				return c, true
			}
		}
		return nil, false
	}
}

// TestPodHoldingsCountsEveryWay: the one count of a pod's GPUs, through the
// holdings table every consumer's test runs too.
func TestPodHoldingsCountsEveryWay(t *testing.T) {
	counting := topologytest.HoldingCounting()
	for _, tc := range topologytest.HoldingCases() {
		t.Run(tc.Name, func(t *testing.T) {
			h := topology.PodUsage(tc.Pod, "", counting, lookup(tc.Claims...))
			require.Equal(t, tc.Want, h.GPUs, "GPUs")
			require.Equal(t, tc.WantWhole, h.Whole(), "Whole")
			// Every key again under the product's.
			byKey := h.ByKey(topologytest.HoldingProduct)
			for key, n := range tc.Want {
				require.Equal(t, n, byKey[key], key)
				require.Equal(t, n, byKey[topology.ProductKeyOf(key, topologytest.HoldingProduct)], key)
			}
			require.Len(t, byKey, 2*len(tc.Want))
			// On its node, whatever node the claim names.
			require.Equal(t, map[string]map[string]int{topologytest.HoldingNode: tc.Want}, h.OnNode(tc.Pod.Spec.NodeName), "OnNode")
		})
	}
}

// TestPodHoldingsWithoutClaims: without a lookup (or a DeviceClass
// mapping) a DRA pod holds nothing it can count; an unknown claim and a
// claim of no counted class neither.
func TestPodHoldingsWithoutClaims(t *testing.T) {
	counting := topologytest.HoldingCounting()
	claim := topologytest.AllocatedClaim("c", 4, topologytest.HoldingNode)
	pod := topologytest.GPUPod(topologytest.HoldingNamespace, "p", 0, topologytest.HoldsClaim("c"))
	require.Empty(t, topology.PodUsage(pod, "", counting, nil).GPUs)
	require.Empty(t, topology.PodUsage(pod, "", topology.Counting{}, lookup(claim)).GPUs)
	require.Empty(t, topology.PodUsage(pod, "", counting, lookup()).GPUs)
	require.Equal(t, map[string]int{"nvidia.com/gpu": 4}, topology.PodUsage(pod, "", counting, lookup(claim)).GPUs)
}

// TestClaimsOnce: a claim two pods share resolves for the first only.
func TestClaimsOnce(t *testing.T) {
	pods, claim := topologytest.SharedClaimPods()
	once := topology.ClaimsOnce(lookup(claim))
	total := 0
	for _, p := range pods {
		for _, n := range topology.PodUsage(p, "", topologytest.HoldingCounting(), once).GPUs {
			total += n
		}
	}
	require.Equal(t, 2, total)
}

// TestClaimNode: the node a node-local allocation's selector names.
func TestClaimNode(t *testing.T) {
	require.Equal(t, "n7", topology.ClaimNode(topologytest.AllocatedClaim("c", 1, "n7")))
	require.Empty(t, topology.ClaimNode(topologytest.AllocatedClaim("c", 1, "")))
	require.Empty(t, topology.ClaimNode(&resourcev1.ResourceClaim{}))
}

// holdingModel is a cluster model of HoldingNodeObject.
func holdingModel(t *testing.T) *topology.Model {
	t.Helper()
	m, err := topology.NewModel(topology.Config{
		Levels:       []topology.Level{{Name: "node", NodeLabel: "kubernetes.io/hostname"}},
		GPUMemoryMiB: topologytest.HoldingCounting().GPUMemory,
	})
	require.NoError(t, err)
	m.UpsertNode(topologytest.HoldingNodeObject())
	return m
}

// free is the free GPUs of resource in m.
func free(t *testing.T, m *topology.Model, resource string) int {
	t.Helper()
	got, err := m.Snapshot().Place(topology.Request{Pods: 1, GPUsPerPod: 1, Resource: resource})
	require.NoError(t, err)
	return got.ClusterFree
}

// TestModelOccupiesWhatPodsHold: each way of the holdings table takes its
// whole GPUs of the node, whichever of pod and claim the informers deliver
// first, and frees them when the pod is gone (the claim deallocated).
func TestModelOccupiesWhatPodsHold(t *testing.T) {
	resources := []string{"nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb"}
	for _, tc := range topologytest.HoldingCases() {
		for _, claimFirst := range []bool{false, true} {
			t.Run(tc.Name, func(t *testing.T) {
				m := holdingModel(t)
				resourceOf := topologytest.HoldingCounting().DeviceResource
				if claimFirst {
					for _, c := range tc.Claims {
						m.UpsertClaim(c, resourceOf)
					}
				}
				m.UpsertPod(tc.Pod)
				if !claimFirst {
					for _, c := range tc.Claims {
						m.UpsertClaim(c, resourceOf)
					}
				}
				for _, res := range resources {
					require.Equal(t, topologytest.HoldingAllocatable-tc.WantWhole[res], free(t, m, res), res)
				}
				m.DeletePod(tc.Pod.Namespace, tc.Pod.Name)
				for _, c := range tc.Claims {
					m.DeleteClaim(c.Namespace, c.Name)
				}
				for _, res := range resources {
					require.Equal(t, topologytest.HoldingAllocatable, free(t, m, res), res)
				}
			})
		}
	}
}

// TestModelCountsASharedClaimOnce: two pods of one claim take its devices
// once; a claim not allocated takes nothing; the devices outlive a
// reconfiguration.
func TestModelCountsASharedClaimOnce(t *testing.T) {
	m := holdingModel(t)
	pods, claim := topologytest.SharedClaimPods()
	resourceOf := topologytest.HoldingCounting().DeviceResource
	for _, p := range pods {
		m.UpsertPod(p)
	}
	pending := claim.DeepCopy()
	pending.Status.Allocation = nil
	m.UpsertClaim(pending, resourceOf)
	require.Equal(t, topologytest.HoldingAllocatable, free(t, m, "nvidia.com/gpu"))
	m.UpsertClaim(claim, resourceOf)
	require.Equal(t, topologytest.HoldingAllocatable-2, free(t, m, "nvidia.com/gpu"))
	next, err := m.Reconfigure(topology.Config{Levels: []topology.Level{{Name: "host", NodeLabel: "kubernetes.io/hostname"}}},
		[]*corev1.Node{topologytest.HoldingNodeObject()})
	require.NoError(t, err)
	require.Equal(t, topologytest.HoldingAllocatable-2, free(t, next, "nvidia.com/gpu"))
	// A network claim moves with the first holder that stays bound.
	network := topologytest.AllocatedClaim("shared-gpus", 2, "")
	m.UpsertClaim(network, resourceOf)
	require.Equal(t, topologytest.HoldingAllocatable-2, free(t, m, "nvidia.com/gpu"))
	m.DeletePod(pods[0].Namespace, pods[0].Name)
	require.Equal(t, topologytest.HoldingAllocatable-2, free(t, m, "nvidia.com/gpu"))
	m.DeletePod(pods[1].Namespace, pods[1].Name)
	require.Equal(t, topologytest.HoldingAllocatable, free(t, m, "nvidia.com/gpu"))
}
