package e2e

import (
	"context"
	"sync/atomic"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// alternatingClient sends each write to its API servers in turn (reads go
// to the first): what clients behind a control plane's load balancer do,
// so every API server calls the webhook for the objects of one test.
type alternatingClient struct {
	client.Client
	others []client.Client
	n      atomic.Uint64
}

// next is the client of the next write.
func (a *alternatingClient) next() client.Client {
	if i := a.n.Add(1) % uint64(len(a.others)+1); i > 0 {
		return a.others[i-1]
	}
	return a.Client
}

func (a *alternatingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return a.next().Create(ctx, obj, opts...)
}

func (a *alternatingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return a.next().Update(ctx, obj, opts...)
}

func (a *alternatingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return a.next().Patch(ctx, obj, patch, opts...)
}

func (a *alternatingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return a.next().Delete(ctx, obj, opts...)
}
