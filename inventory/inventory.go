// Package inventory reads what exists in a cluster, from a snapshot file or
// a live API server: the Nodes, Namespaces, Pods and DRA ResourceClaims,
// ResourceSlices and DeviceClasses a cluster state is built from, the governed owners decided beside the pods, and a shared
// quota ledger's TenantLedgers. mandate audit, explain, report and the
// authority metrics all stand on it; none of them owns it.
package inventory

import (
	"fmt"
	"os"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

var (
	nodeGVK      = schema.GroupVersionKind{Version: "v1", Kind: "Node"}
	namespaceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	podGVK       = workload.PodGVK
	claimGVK     = resourcev1.SchemeGroupVersion.WithKind("ResourceClaim")
	templateGVK  = resourcev1.SchemeGroupVersion.WithKind("ResourceClaimTemplate")
	sliceGVK     = resourcev1.SchemeGroupVersion.WithKind("ResourceSlice")
	classGVK     = resourcev1.SchemeGroupVersion.WithKind("DeviceClass")
)

// Inventory is what exists in a cluster: the Nodes, Namespaces and Pods the
// cluster state is built from, and the governed owners (batch Jobs,
// PyTorchJobs, Volcano Jobs) audited beside the Pods.
type Inventory struct {
	// Source says where the inventory came from, for the report.
	Source     string
	Nodes      []*unstructured.Unstructured
	Namespaces []*unstructured.Unstructured
	Pods       []*unstructured.Unstructured
	Owners     []*unstructured.Unstructured
	// Claims are the DRA ResourceClaims (resource.k8s.io/v1), whose
	// devices the pods that reference them hold (ClaimLookup).
	Claims []*unstructured.Unstructured
	// Templates are the DRA ResourceClaimTemplates, whose requests a
	// workload's pods claim (and count until their claims are made).
	Templates []*unstructured.Unstructured
	// Devices are the DRA ResourceSlices and DeviceClasses: the GPUs the
	// slices publish, of the classes the authority model counts, are
	// nodes' capacity (cluster.State.UpsertSlice).
	Devices []*unstructured.Unstructured
	// Ledgers are the TenantLedger objects of a shared quota ledger: the
	// reservations admitted workloads hold before their pods are seen.
	Ledgers []*unstructured.Unstructured
	// Notes say what could not be listed and was skipped (a kind whose
	// CRD is not installed).
	Notes []string
	// Facts are, in an inventory ListCounted read, its Pods: what the
	// cluster state counts of each (cluster.PodFacts), in place of Pods.
	Facts []*cluster.PodFacts
	// countedOnly: the Pods are Facts and the Nodes stripped to what the
	// state counts (ListCounted): see CountedOnly.
	countedOnly bool
	// held: the Facts and Nodes were given (ListCountedHeld), not listed.
	held bool
	// claims are Claims typed, by namespace/name (ClaimLookup).
	claims map[string]*resourcev1.ResourceClaim
	// typedNodes are Nodes typed (TypedNodes): given (ListCountedHeld),
	// else converted on first use.
	typedNodes []*corev1.Node
}

// TypedNodes is every node of the inventory, typed, in the order of
// Nodes: the nodes given to ListCountedHeld as they are, else each of
// Nodes converted once. They are shared: callers only read them.
func (inv *Inventory) TypedNodes() ([]*corev1.Node, error) {
	if inv.typedNodes != nil || len(inv.Nodes) == 0 {
		return inv.typedNodes, nil
	}
	nodes := make([]*corev1.Node, 0, len(inv.Nodes))
	for _, obj := range inv.Nodes {
		n := &corev1.Node{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, n); err != nil {
			return nil, fmt.Errorf("malformed Node %s: %w", obj.GetName(), err)
		}
		nodes = append(nodes, n)
	}
	inv.typedNodes = nodes
	return nodes, nil
}

// Count feeds state the inventory's nodes (TypedNodes), DRA devices,
// namespaces and pods: each of Pods typed, each of Facts as the informers count it
// (cluster.State.UpsertFacts), never built back into a Pod.
func (inv *Inventory) Count(state *cluster.State) error {
	nodes, err := inv.TypedNodes()
	if err != nil {
		return err
	}
	for _, n := range nodes {
		state.UpsertNode(n)
	}
	for _, obj := range slices.Concat(inv.Devices, inv.Templates) {
		if err := state.Add(obj); err != nil {
			return fmt.Errorf("unable to count %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	for _, obj := range inv.Namespaces {
		if err := state.Add(obj); err != nil {
			return fmt.Errorf("unable to count Namespace %s: %w", obj.GetName(), err)
		}
	}
	for _, obj := range inv.Pods {
		pod := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, pod); err != nil {
			return fmt.Errorf("malformed Pod %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
		state.UpsertPod(pod)
	}
	for _, f := range inv.Facts {
		state.UpsertFacts(f)
	}
	return nil
}

// CountedOnly says the inventory holds its pods as what the cluster state
// counts of them (ListCounted, ListCountedHeld), not whole: a decision of
// a workload whose pods are counted cannot read them back.
func (inv *Inventory) CountedOnly() bool { return inv.countedOnly }

// EachPod calls fn with every pod of the inventory, typed: each of Pods,
// then the pod each of Facts stands for (cluster.PodFacts.Pod). It stops at
// the first error.
func (inv *Inventory) EachPod(fn func(*corev1.Pod) error) error {
	for _, obj := range inv.Pods {
		pod := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, pod); err != nil {
			return fmt.Errorf("malformed Pod %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
		if err := fn(pod); err != nil {
			return err
		}
	}
	for _, f := range inv.Facts {
		if err := fn(f.Pod()); err != nil {
			return err
		}
	}
	return nil
}

// ClaimLookup resolves the inventory's DRA ResourceClaims
// (topology.ClaimLookup): what a pod uses of them is read through
// topology.PodUsage. A malformed claim is an error.
func (inv *Inventory) ClaimLookup() (topology.ClaimLookup, error) {
	if inv.claims == nil {
		inv.claims = make(map[string]*resourcev1.ResourceClaim, len(inv.Claims))
		for _, obj := range inv.Claims {
			c := &resourcev1.ResourceClaim{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, c); err != nil {
				inv.claims = nil
				return nil, fmt.Errorf("malformed ResourceClaim %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
			}
			inv.claims[c.Namespace+"/"+c.Name] = c
		}
	}
	claims := inv.claims
	return func(namespace, name string) (*resourcev1.ResourceClaim, bool) {
		c, ok := claims[namespace+"/"+name]
		return c, ok
	}, nil
}

// Add files one object by kind; kinds Mandate does not govern or need are
// ignored.
func (inv *Inventory) Add(obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	switch {
	case gvk == nodeGVK:
		inv.Nodes = append(inv.Nodes, obj)
	case gvk == namespaceGVK:
		inv.Namespaces = append(inv.Namespaces, obj)
	case gvk == podGVK:
		inv.Pods = append(inv.Pods, obj)
	case gvk == claimGVK:
		inv.Claims = append(inv.Claims, obj)
		inv.claims = nil
	case gvk == templateGVK:
		inv.Templates = append(inv.Templates, obj)
	case gvk == sliceGVK || gvk == classGVK:
		inv.Devices = append(inv.Devices, obj)
	case isGangOwner(gvk):
		inv.Owners = append(inv.Owners, obj)
	case gvk == cluster.TenantLedgerGVK:
		inv.Ledgers = append(inv.Ledgers, obj)
	}
	return nil
}

// ReadSnapshot reads a snapshot file to audit (ReadCluster) and refuses
// one that holds no workload.
func ReadSnapshot(path string) (*Inventory, error) {
	inv, err := ReadCluster(path)
	if err != nil {
		return nil, err
	}
	if len(inv.Pods)+len(inv.Owners) == 0 {
		return nil, fmt.Errorf("cluster snapshot %s holds no Pod, Job, PyTorchJob or Volcano Job to audit", path)
	}
	return inv, nil
}

// ReadCluster reads a snapshot file: what `kubectl get
// nodes,namespaces,pods,resourceclaims,resourceslices,deviceclasses,jobs,pytorchjobs,vcjobs -A -o yaml`
// prints (a List or multi-document YAML or JSON), the format `mandate
// eval --cluster` reads too (it ignores the owners). A cluster with nodes
// and no workload yet is one: its capacity is reported.
func ReadCluster(path string) (*Inventory, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("unable to read cluster snapshot: %w", err)
	}
	defer f.Close()
	inv := &Inventory{Source: "snapshot " + path}
	if err := cluster.EachObject(f, inv.Add); err != nil {
		return nil, fmt.Errorf("cluster snapshot %s: %w", path, err)
	}
	if len(inv.Pods)+len(inv.Owners)+len(inv.Nodes) == 0 {
		return nil, fmt.Errorf("cluster snapshot %s holds no Node, Pod, Job, PyTorchJob or Volcano Job", path)
	}
	return inv, nil
}

// isGangOwner: the pods of a gang owner kind are decided through it, as the
// webhook admits them with the owner's directives.
func isGangOwner(gvk schema.GroupVersionKind) bool {
	k, ok := workload.Lookup(gvk)
	return ok && k.GangOwner
}
