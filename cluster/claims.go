package cluster

import (
	"context"
	"fmt"
	"maps"
	"sync"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/topology"
)

// ClaimStore keeps the DRA ResourceClaims and ResourceClaimTemplates of a
// snapshot file (resource.k8s.io/v1), so `mandate eval --cluster` counts
// the claims pods reference as serve does from its cache. Its Get reads
// them like a client.Reader.
type ClaimStore struct {
	mu   sync.RWMutex
	objs map[string]*unstructured.Unstructured // kind/namespace/name
}

// claimKinds are the kinds a ClaimStore keeps.
var claimKinds = map[string]bool{"ResourceClaim": true, "ResourceClaimTemplate": true}

// IsClaimObject says whether obj is a DRA ResourceClaim or
// ResourceClaimTemplate (resource.k8s.io/v1), which a ClaimStore keeps.
func IsClaimObject(obj *unstructured.Unstructured) bool {
	return obj.GetAPIVersion() == resourcev1.SchemeGroupVersion.String() && claimKinds[obj.GetKind()]
}

// add keeps obj when it is a resource.k8s.io/v1 claim or claim template.
func (c *ClaimStore) add(obj *unstructured.Unstructured) bool {
	if !IsClaimObject(obj) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.objs == nil {
		c.objs = map[string]*unstructured.Unstructured{}
	}
	c.objs[obj.GetKind()+"/"+obj.GetNamespace()+"/"+obj.GetName()] = obj.DeepCopy()
	return true
}

// Get reads a stored claim or claim template into obj (a typed
// *resourcev1.ResourceClaim or *resourcev1.ResourceClaimTemplate); a
// missing one is NotFound.
func (c *ClaimStore) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	kind := ""
	switch obj.(type) {
	case *resourcev1.ResourceClaim:
		kind = "ResourceClaim"
	case *resourcev1.ResourceClaimTemplate:
		kind = "ResourceClaimTemplate"
	default:
		return fmt.Errorf("a snapshot keeps only DRA claims and claim templates, not %T", obj)
	}
	c.mu.RLock()
	u, ok := c.objs[kind+"/"+key.Namespace+"/"+key.Name]
	c.mu.RUnlock()
	if !ok {
		return apierrors.NewNotFound(resourcev1.Resource(kind), key.Name)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return fmt.Errorf("malformed %s %s: %w", kind, key, err)
	}
	return nil
}

// UpsertClaim counts the GPUs a DRA ResourceClaim holds (its allocated
// devices, or what it requests while not allocated) for the pod that
// holds it (ledger.UpsertClaim), and its allocated devices on their node
// (topology.Model.UpsertClaim), mapped to quota resources by the model's
// DeviceClasses. The claim is kept, not copied: it must not change
// afterwards (informers' objects never do).
func (s *State) UpsertClaim(c *resourcev1.ResourceClaim) {
	key := c.Namespace + "/" + c.Name
	s.shape.RLock()
	defer s.shape.RUnlock()
	s.claimsMu.Lock()
	defer s.claimsMu.Unlock()
	s.draClaims[key] = c
	s.ledger.UpsertClaim(c.Namespace, c.Name, topology.ClaimGPUs(c, s.deviceResource))
	s.topo.UpsertClaim(c, s.deviceResource)
}

// UpsertTemplate counts the GPUs a DRA ResourceClaimTemplate requests for
// the pods whose claims from it are not made yet (ledger.UpsertTemplate).
func (s *State) UpsertTemplate(t *resourcev1.ResourceClaimTemplate) {
	key := t.Namespace + "/" + t.Name
	s.shape.RLock()
	defer s.shape.RUnlock()
	s.claimsMu.Lock()
	defer s.claimsMu.Unlock()
	s.draTemplates[key] = t
	s.ledger.UpsertTemplate(t.Namespace, t.Name, topology.RequestedDevices(t.Spec.Spec.Devices.Requests, s.deviceResource).ByResource)
}

// DeleteTemplate forgets a DRA ResourceClaimTemplate.
func (s *State) DeleteTemplate(namespace, name string) {
	s.shape.RLock()
	defer s.shape.RUnlock()
	s.claimsMu.Lock()
	defer s.claimsMu.Unlock()
	delete(s.draTemplates, namespace+"/"+name)
	s.ledger.DeleteTemplate(namespace, name)
}

// DeleteClaim forgets a DRA ResourceClaim: the pods that held it count its
// devices no more, nor does its node.
func (s *State) DeleteClaim(namespace, name string) {
	s.shape.RLock()
	defer s.shape.RUnlock()
	s.claimsMu.Lock()
	defer s.claimsMu.Unlock()
	delete(s.draClaims, namespace+"/"+name)
	s.ledger.DeleteClaim(namespace, name)
	s.topo.DeleteClaim(namespace, name)
}

// ClaimLookup resolves the DRA claims the state counts
// (topology.ClaimLookup), for reading a pod's usage as the state
// counts them.
func (s *State) ClaimLookup() topology.ClaimLookup {
	return func(namespace, name string) (*resourcev1.ResourceClaim, bool) {
		s.claimsMu.Lock()
		defer s.claimsMu.Unlock()
		c, ok := s.draClaims[namespace+"/"+name]
		return c, ok
	}
}

// setDeviceClasses maps DRA devices to quota resources by m's
// DeviceClasses, counting every claim known again when the mapping
// changed. The caller holds shape.
func (s *State) setDeviceClasses(m model.Model) {
	s.claimsMu.Lock()
	defer s.claimsMu.Unlock()
	if s.draClaims != nil && maps.Equal(s.deviceClasses, m.DeviceClasses) {
		return
	}
	if s.draClaims == nil {
		s.draClaims = map[string]*resourcev1.ResourceClaim{}
		s.draTemplates = map[string]*resourcev1.ResourceClaimTemplate{}
	}
	s.deviceClasses, s.deviceResource = maps.Clone(m.DeviceClasses), m.DeviceResource
	for _, c := range s.draClaims {
		s.ledger.UpsertClaim(c.Namespace, c.Name, topology.ClaimGPUs(c, s.deviceResource))
		s.topo.UpsertClaim(c, s.deviceResource)
	}
	for _, t := range s.draTemplates {
		s.ledger.UpsertTemplate(t.Namespace, t.Name, topology.RequestedDevices(t.Spec.Spec.Devices.Requests, s.deviceResource).ByResource)
	}
}
