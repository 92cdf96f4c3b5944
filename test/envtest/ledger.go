package envtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/cluster"
)

// LedgerSize is the shared quota ledger (--shared-quota) at one moment:
// how many TenantLedger objects there are, their size as stored (the JSON
// of each whole object, which etcd's request limit applies to) and the
// reservation lines they hold.
type LedgerSize struct {
	Objects, Bytes, Entries int
}

// ReadLedger lists every TenantLedger of the API server c talks to.
func ReadLedger(ctx context.Context, c client.Client) (LedgerSize, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(cluster.TenantLedgerGVK.GroupVersion().WithKind(cluster.TenantLedgerGVK.Kind + "List"))
	if err := c.List(ctx, list); err != nil {
		return LedgerSize{}, fmt.Errorf("unable to list the %s objects: %w", cluster.TenantLedgerGVK.Kind, err)
	}
	var s LedgerSize
	for _, l := range list.Items {
		raw, err := json.Marshal(l.Object)
		if err != nil {
			return LedgerSize{}, fmt.Errorf("unable to encode %s %s: %w", cluster.TenantLedgerGVK.Kind, l.GetName(), err)
		}
		text, _, _ := unstructured.NestedString(l.Object, "spec", "reservations")
		s.Objects++
		s.Bytes += len(raw)
		s.Entries += strings.Count(text, "\n")
	}
	return s, nil
}
