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

// TenantLedgers are every TenantLedger object (the shared quota ledger)
// of the API server c talks to.
func TenantLedgers(ctx context.Context, c client.Reader) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(cluster.TenantLedgerGVK.GroupVersion().WithKind(cluster.TenantLedgerGVK.Kind + "List"))
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("unable to list the %s objects: %w", cluster.TenantLedgerGVK.Kind, err)
	}
	return list.Items, nil
}

// Reservations is the spec.reservations text of a TenantLedger: a line per
// reservation or gang claim.
func Reservations(ledger *unstructured.Unstructured) string {
	text, _, _ := unstructured.NestedString(ledger.Object, "spec", "reservations")
	return text
}

// ReadLedger measures every TenantLedger of the API server c talks to.
func ReadLedger(ctx context.Context, c client.Client) (LedgerSize, error) {
	ledgers, err := TenantLedgers(ctx, c)
	if err != nil {
		return LedgerSize{}, err
	}
	var s LedgerSize
	for _, l := range ledgers {
		raw, err := json.Marshal(l.Object)
		if err != nil {
			return LedgerSize{}, fmt.Errorf("unable to encode %s %s: %w", cluster.TenantLedgerGVK.Kind, l.GetName(), err)
		}
		s.Objects++
		s.Bytes += len(raw)
		s.Entries += strings.Count(Reservations(&l), "\n")
	}
	return s, nil
}
