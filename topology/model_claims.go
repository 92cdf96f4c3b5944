package topology

import (
	"slices"

	resourcev1 "k8s.io/api/resource/v1"
)

// DRA claims on the cluster model: the devices allocated to a
// ResourceClaim occupy a node for as long as the allocation stands,
// whichever pods hold the claim (a claim shared by several pods once).
// The node is the one the allocation's node selector names (ClaimNode),
// else, for devices that are not node-local, the node of a bound pod that
// holds the claim (the first by namespace/name).

// modelClaim is what the model keeps of one claim.
type modelClaim struct {
	// gpus are its allocated devices by quota resource (ClaimGPUs of an
	// allocated claim); node its allocation's node ("" when not said).
	gpus map[string]int
	node string
}

// claimPodKey is the key a claim's occupancy is kept under in the model's
// pods: a pod's key is namespace/name (one slash), so no pod's can be it.
func claimPodKey(claim string) string { return "ResourceClaim/" + claim }

// UpsertClaim adds or updates a DRA ResourceClaim: once allocated, its
// devices of the classes resourceOf counts (ClaimGPUs) occupy its node.
// A claim not allocated yet occupies nothing.
func (m *Model) UpsertClaim(c *resourcev1.ResourceClaim, resourceOf DeviceResourceFunc) {
	if c == nil {
		return
	}
	key := c.Namespace + "/" + c.Name
	var next *modelClaim
	if c.Status.Allocation != nil {
		if gpus := ClaimGPUs(c, resourceOf); len(gpus) > 0 {
			next = &modelClaim{gpus: gpus, node: ClaimNode(c)}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if next == nil {
		delete(m.claims, key)
	} else {
		m.claims[key] = next
	}
	m.occupyClaim(key)
}

// DeleteClaim removes a DRA ResourceClaim: its devices occupy no node.
func (m *Model) DeleteClaim(namespace, name string) {
	key := namespace + "/" + name
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.claims, key)
	m.occupyClaim(key)
}

// setHolder records the claims the pod of key holds while bound to node
// (none: it holds none, or is not bound) and recounts the claims whose
// holders changed. The caller holds mu.
func (m *Model) setHolder(key, node string, claims []string) {
	old := m.podClaims[key]
	if len(old) == 0 && len(claims) == 0 {
		return
	}
	for _, c := range old {
		delete(m.holders[c], key)
		if len(m.holders[c]) == 0 {
			delete(m.holders, c)
		}
	}
	if len(claims) == 0 {
		delete(m.podClaims, key)
	} else {
		m.podClaims[key] = claims
		for _, c := range claims {
			if m.holders[c] == nil {
				m.holders[c] = map[string]string{}
			}
			m.holders[c][key] = node
		}
	}
	for _, c := range slices.Concat(old, claims) {
		m.occupyClaim(c)
	}
}

// occupyClaim sets what the claim of key occupies: its devices on its
// allocation's node, else on the first bound holder's. The caller holds
// mu.
func (m *Model) occupyClaim(key string) {
	var next podState
	if c := m.claims[key]; c != nil {
		node := c.node
		if node == "" {
			first := ""
			for pod, n := range m.holders[key] {
				if first == "" || pod < first {
					first, node = pod, n
				}
			}
		}
		if node != "" {
			next = podState{node: node, req: CountsOf(c.gpus)}
		}
	}
	m.setPod(claimPodKey(key), next)
}
