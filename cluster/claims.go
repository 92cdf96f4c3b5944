package cluster

import (
	"context"
	"fmt"
	"sync"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// add keeps obj when it is a resource.k8s.io/v1 claim or claim template.
func (c *ClaimStore) add(obj *unstructured.Unstructured) bool {
	if obj.GetAPIVersion() != resourcev1.SchemeGroupVersion.String() || !claimKinds[obj.GetKind()] {
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
