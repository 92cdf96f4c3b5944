package audit

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/workload"
)

// listPageSize bounds one List call, so a large cluster is read in pages.
const listPageSize = 500

// ListKubeconfig reads the inventory from the cluster a kubeconfig file
// names (its current context, or kubeContext when set).
func ListKubeconfig(ctx context.Context, path, kubeContext string) (*Inventory, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: kubeContext}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("unable to read kubeconfig %s: %w", path, err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("unable to connect to %s: %w", cfg.Host, err)
	}
	return List(ctx, c, "cluster "+cfg.Host)
}

// List reads the inventory from an API server: every Node, Namespace and
// Pod (the whole cluster, since usage and free capacity are cluster-wide),
// every governed workload kind, and the shared quota ledger's TenantLedger
// objects. A kind whose CRD is not installed is skipped with a note, not an
// error.
func List(ctx context.Context, c client.Reader, source string) (*Inventory, error) {
	log := ctrl.LoggerFrom(ctx)
	inv := &Inventory{Source: source}
	kinds := append([]schema.GroupVersionKind{nodeGVK, namespaceGVK, podGVK}, workload.GangOwners()...)
	kinds = append(kinds, cluster.TenantLedgerGVK)
	for _, gvk := range kinds {
		n, err := listAll(ctx, c, gvk, inv)
		if err != nil {
			if gvk == cluster.TenantLedgerGVK && apierrors.IsForbidden(err) {
				// Reservations only add to the report; a reader that may
				// not list them sees what pods hold.
				inv.Notes = append(inv.Notes, fmt.Sprintf("%s skipped: not allowed to list them (reserved GPUs not shown): %v", gvk.Kind, err))
				continue
			}
			if optionalKind(gvk) && (meta.IsNoMatchError(err) || apierrors.IsNotFound(err)) {
				note := fmt.Sprintf("%s (%s) skipped: the API server does not serve it (CRD not installed)", gvk.Kind, gvk.GroupVersion())
				inv.Notes = append(inv.Notes, note)
				log.V(1).Info("kind not served, skipped", "kind", gvk.String())
				continue
			}
			return nil, fmt.Errorf("unable to list %s (%s): %w", gvk.Kind, gvk.GroupVersion(), err)
		}
		log.V(1).Info("listed", "kind", gvk.String(), "count", n)
	}
	return inv, nil
}

// optionalKind says whether gvk is one that may legitimately be missing: a
// custom resource, not a built-in kind.
func optionalKind(gvk schema.GroupVersionKind) bool {
	return gvk.Group != "" && gvk != workload.JobGVK
}

// listAll lists every object of one kind, page by page, into inv.
func listAll(ctx context.Context, c client.Reader, gvk schema.GroupVersionKind, inv *Inventory) (int, error) {
	n := 0
	cont := ""
	for {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, client.Limit(listPageSize), client.Continue(cont)); err != nil {
			return n, err
		}
		for i := range list.Items {
			obj := &list.Items[i]
			obj.SetGroupVersionKind(gvk)
			if err := inv.Add(obj); err != nil {
				return n, err
			}
			n++
		}
		if cont = list.GetContinue(); cont == "" {
			return n, nil
		}
	}
}
