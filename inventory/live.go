package inventory

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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

// List reads the inventory from an API server: every Node, Namespace, Pod
// and DRA ResourceClaim (the whole cluster, since usage and free capacity
// are cluster-wide), every governed workload kind, and the shared quota ledger's TenantLedger
// objects. A kind whose CRD is not installed is skipped with a note, not an
// error.
func List(ctx context.Context, c client.Reader, source string) (*Inventory, error) {
	return list(ctx, c, &Inventory{Source: source})
}

// ListCounted reads the inventory as List does, for a cluster report:
// each Pod and Node is read typed, page by page, and only what the cluster
// state counts of it is kept (a Pod's cluster.PodFacts in Facts, a Node
// stripped by cluster.StripNode: what serve's informers keep), never the
// whole object, so one report over a large cluster holds a fraction of
// what List holds. Audit decides of such
// an inventory only the workloads none of whose pods is counted (a gang
// owner whose pods do not exist yet or have all finished): the only ones a
// cluster report lists as blocked. Pods, and owners with counted pods, are
// counted, not decided: a stripped pod cannot be decided as it was
// written.
func ListCounted(ctx context.Context, c client.Reader, source string) (*Inventory, error) {
	return list(ctx, c, &Inventory{Source: source, countedOnly: true})
}

// ListCountedHeld is ListCounted with the Pods and Nodes given as serve's
// informers hold them (cluster.StripTransforms: the same PodFacts and
// stripped Nodes ListCounted keeps), read by c only for the rest: a
// report inside serve then shares serve's objects instead of listing the
// cluster's pods again and keeping its own copy of each. The objects are
// only read.
func ListCountedHeld(ctx context.Context, c client.Reader, source string, pods []*cluster.PodFacts, nodes []*corev1.Node) (*Inventory, error) {
	inv := &Inventory{Source: source, countedOnly: true, held: true, Facts: pods}
	for _, n := range nodes {
		obj, err := strippedNode(n)
		if err != nil {
			return nil, err
		}
		inv.Nodes = append(inv.Nodes, obj)
		inv.typedNodes = append(inv.typedNodes, n)
	}
	return list(ctx, c, inv)
}

// strippedNode is n as an inventory keeps it: stripped (a no-op for a
// node stripped already), unstructured.
func strippedNode(n *corev1.Node) (*unstructured.Unstructured, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cluster.StripNode(n))
	if err != nil {
		return nil, fmt.Errorf("unable to keep what is counted of Node %s: %w", n.Name, err)
	}
	obj := &unstructured.Unstructured{Object: u}
	obj.SetGroupVersionKind(nodeGVK)
	return obj, nil
}

func list(ctx context.Context, c client.Reader, inv *Inventory) (*Inventory, error) {
	log := ctrl.LoggerFrom(ctx)
	kinds := append([]schema.GroupVersionKind{nodeGVK, namespaceGVK, podGVK}, workload.GangOwners()...)
	kinds = append(kinds, claimGVK, templateGVK, sliceGVK, classGVK, cluster.TenantLedgerGVK)
	for _, gvk := range kinds {
		var n int
		var err error
		switch {
		case inv.held && (gvk == podGVK || gvk == nodeGVK):
			continue // given
		case inv.countedOnly && gvk == podGVK:
			n, err = listTyped(ctx, c, func() *corev1.PodList { return &corev1.PodList{} }, func(l *corev1.PodList) error {
				for i := range l.Items {
					inv.Facts = append(inv.Facts, cluster.CompactPod(&l.Items[i]))
				}
				return nil
			})
		case inv.countedOnly && gvk == nodeGVK:
			n, err = listTyped(ctx, c, func() *corev1.NodeList { return &corev1.NodeList{} }, func(l *corev1.NodeList) error {
				for i := range l.Items {
					obj, err := strippedNode(&l.Items[i])
					if err != nil {
						return err
					}
					inv.Nodes = append(inv.Nodes, obj)
				}
				return nil
			})
		default:
			n, err = listAll(ctx, c, gvk, inv)
		}
		if err != nil {
			if (gvk == claimGVK || gvk == templateGVK) && apierrors.IsForbidden(err) {
				// Without them, pods count their extended resources only.
				inv.Notes = append(inv.Notes, fmt.Sprintf("%s skipped: not allowed to list them (the devices of DRA claims not counted): %v", gvk.Kind, err))
				continue
			}
			if (gvk == sliceGVK || gvk == classGVK) && apierrors.IsForbidden(err) {
				// Without them, nodes count their allocatable GPUs only.
				inv.Notes = append(inv.Notes, fmt.Sprintf("%s skipped: not allowed to list them (the GPUs DRA publishes not counted): %v", gvk.Kind, err))
				continue
			}
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

// listTyped lists every object of one built-in kind typed, page by page,
// and hands each page to keep, which files what it needs into the
// inventory: a page's whole objects are garbage once it is read.
func listTyped[L client.ObjectList](ctx context.Context, c client.Reader, newList func() L, keep func(L) error) (int, error) {
	n := 0
	cont := ""
	for {
		list := newList()
		if err := c.List(ctx, list, client.Limit(listPageSize), client.Continue(cont)); err != nil {
			return n, err
		}
		if err := keep(list); err != nil {
			return n, err
		}
		n += meta.LenList(list)
		if cont = list.GetContinue(); cont == "" {
			return n, nil
		}
	}
}
