package schedsync

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/workload"
)

// Action is what Sync does (or would do) to one object.
type Action string

// The actions of a Plan.
const (
	// Create: the model wants an object the cluster lacks.
	Create Action = "create"
	// Update: a Mandate object differs from the model (Fields say where).
	Update Action = "update"
	// Recreate: the difference is in a field the API server does not let
	// change (a PriorityClass's value, a Topology's levels).
	Recreate Action = "recreate"
	// Close: a queue of a tenant the model no longer has still holds
	// workloads; it is closed, not deleted.
	Close Action = "close"
	// Delete: a Mandate object the model no longer wants.
	Delete Action = "delete"
	// Foreign: an object the model wants exists but is not Mandate's; it
	// is left alone.
	Foreign Action = "foreign"
	// Unchanged: the cluster already matches.
	Unchanged Action = "unchanged"
)

// Change is one entry of a Plan.
type Change struct {
	Action     Action   `json:"action"`
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace,omitempty"`
	Name       string   `json:"name"`
	Fields     []string `json:"fields,omitempty"`
	Detail     string   `json:"detail,omitempty"`

	desired Object
	live    *unstructured.Unstructured
}

// Drift reports whether the change is a difference between the model and
// the cluster.
func (c Change) Drift() bool { return c.Action != Unchanged }

// Plan is every desired and every Mandate-labelled object with what Sync
// does to it, in the order it does it.
type Plan struct {
	Changes []Change `json:"changes"`
}

// Drift lists the changes that are differences between model and cluster.
func (p Plan) Drift() []Change {
	var out []Change
	for _, c := range p.Changes {
		if c.Drift() {
			out = append(out, c)
		}
	}
	return out
}

// Syncer reconciles scheduler objects with server-side apply.
type Syncer struct {
	// Client reads and writes the cluster.
	Client client.Client
}

// Plan compares the desired objects with the cluster: each is dry-run
// applied, so the API server's own defaulting and schemas decide what
// differs; every Mandate-labelled object of the given kinds that is not
// desired is to be deleted, or closed while it holds workloads.
func (s Syncer) Plan(ctx context.Context, desired []Object, kinds []Kind) (Plan, error) {
	var p Plan
	want := map[string]bool{}
	for _, d := range desired {
		want[objectKey(d.Unstructured)] = true
		c, err := s.planDesired(ctx, d)
		if err != nil {
			return p, err
		}
		p.Changes = append(p.Changes, c)
	}
	h := &holdings{c: s.Client}
	var prune []Change
	for _, k := range kinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(k.GVK.GroupVersion().WithKind(k.GVK.Kind + "List"))
		err := s.Client.List(ctx, list, client.MatchingLabels{config.LabelManagedBy: config.ManagedBy, config.LabelComponent: Component})
		if err != nil {
			return p, fmt.Errorf("unable to list the %s objects Mandate manages: %w", k.GVK.Kind, err)
		}
		for i := range list.Items {
			live := &list.Items[i]
			if want[objectKey(live)] {
				continue
			}
			c, err := s.planUnwanted(ctx, k, live, h)
			if err != nil {
				return p, err
			}
			prune = append(prune, c)
		}
	}
	// Deletions and closes run children first: the reverse of creation.
	sort.SliceStable(prune, func(i, j int) bool {
		_, a := kindOf(prune[i].live.GroupVersionKind())
		_, b := kindOf(prune[j].live.GroupVersionKind())
		return a > b
	})
	p.Changes = append(p.Changes, prune...)
	return p, nil
}

func (s Syncer) planDesired(ctx context.Context, d Object) (Change, error) {
	c := changeFor(d.Unstructured)
	c.desired = d
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(d.GroupVersionKind())
	err := s.Client.Get(ctx, client.ObjectKeyFromObject(d.Unstructured), live)
	switch {
	case apierrors.IsNotFound(err):
		// A server-side dry run checks the object against the schemas now,
		// so --dry-run and --check fail on what sync would fail on. Other
		// refusals are noted, not fatal: a scheduler's admission webhook
		// may refuse a child queue whose parent is only planned (Volcano
		// checks the parent exists); sync creates parents first.
		c.Action = Create
		if _, err := s.apply(ctx, d.Unstructured, true); err != nil {
			if apierrors.IsInvalid(err) {
				return c, err
			}
			if apierrors.IsNotFound(err) && d.GetNamespace() != "" {
				// Only the namespace can be missing: sync would fail.
				c.Detail = fmt.Sprintf("namespace %s does not exist: is the scheduler installed elsewhere? %v", d.GetNamespace(), err)
				return c, nil
			}
			c.Detail = "dry run refused (the objects before it are not created yet): " + err.Error()
		}
		return c, nil
	case meta.IsNoMatchError(err):
		return c, fmt.Errorf("unable to read %s %s: the API server does not serve it (are the scheduler's CRDs installed?): %w",
			d.GetKind(), d.GetName(), err)
	case apierrors.IsForbidden(err) && d.Vet != nil:
		// A scheduler's configuration in its own namespace, where sync may
		// not be granted (the chart grants it where that namespace exists
		// at install): reported, and the rest is synced.
		c.Action = Foreign
		c.Detail = fmt.Sprintf("unable to read it, so it is left alone (grant get, create and patch of it, or leave its scheduler out): %v", err)
		return c, nil
	case err != nil:
		return c, fmt.Errorf("unable to read %s %s: %w", d.GetKind(), d.GetName(), err)
	}
	c.live = live
	if !isMandates(live) {
		return s.planForeign(ctx, c, d, live), nil
	}
	after, err := s.apply(ctx, d.Unstructured, true)
	if immutable(err) {
		c.Action = Recreate
		c.Detail = "a field the API server does not let change differs: " + err.Error()
		return c, nil
	}
	if err != nil {
		return c, err
	}
	c.Fields = diffObjects(live, after)
	if d.Status != nil {
		for _, f := range sortedKeys(d.Status) {
			got, _, _ := unstructured.NestedFieldNoCopy(live.Object, "status", f)
			if fmt.Sprint(got) != fmt.Sprint(d.Status[f]) {
				c.Fields = append(c.Fields, fmt.Sprintf("status.%s: %v -> %v", f, display(got), d.Status[f]))
			}
		}
	}
	c.Action = Unchanged
	if len(c.Fields) > 0 {
		c.Action = Update
	}
	if d.Vet != nil {
		if reasons := d.Vet(live); len(reasons) > 0 {
			c.Detail = "as it is now it breaks the promise: " + strings.Join(reasons, "; ")
		}
	}
	return c, nil
}

// planForeign compares an object that is not Mandate's with the model: it
// is never written, and differs only where the model's fields do (its
// labels aside), so a scheduler's own PriorityClass with the model's value
// is no drift.
func (s Syncer) planForeign(ctx context.Context, c Change, d Object, live *unstructured.Unstructured) Change {
	c.Action = Foreign
	c.Detail = "exists and is not labelled as Mandate's: left alone"
	if d.Vet != nil {
		return vetForeign(c, d, live)
	}
	after, err := s.apply(ctx, d.Unstructured, true)
	if err != nil {
		c.Detail += "; " + err.Error()
		return c
	}
	for _, f := range diffObjects(live, after) {
		if !strings.HasPrefix(f, "metadata.") {
			c.Fields = append(c.Fields, f)
		}
	}
	if len(c.Fields) == 0 {
		c.Action = Unchanged
		c.Detail = "not Mandate's, but as the model wants it"
	}
	return c
}

// vetForeign judges a foreign object the model only needs to keep the
// promise, not to match: it is no drift when it does, and a Foreign change
// with the reasons when it does not.
func vetForeign(c Change, d Object, live *unstructured.Unstructured) Change {
	reasons := d.Vet(live)
	if len(reasons) == 0 {
		c.Action = Unchanged
		c.Detail = "not Mandate's, but keeps the promise"
		return c
	}
	c.Detail += "; it breaks the promise: " + strings.Join(reasons, "; ") +
		" (set it as mandate sync --diff shows, where it is installed from)"
	return c
}

func (s Syncer) planUnwanted(ctx context.Context, k Kind, live *unstructured.Unstructured, h *holdings) (Change, error) {
	c := changeFor(live)
	c.live = live
	c.Action = Delete
	if !k.Queue {
		return c, nil
	}
	n, err := h.count(ctx, k, live)
	if err != nil {
		return c, err
	}
	if n == 0 {
		c.Detail = "no workloads left in it"
		return c, nil
	}
	closed, err := closedObject(k, live)
	if err != nil {
		return c, err
	}
	c.desired = closed
	c.Detail = fmt.Sprintf("holds %d workload(s): closed, not deleted", n)
	after, err := s.apply(ctx, closed.Unstructured, true)
	if err != nil {
		return c, err
	}
	c.Fields = diffObjects(live, after)
	if closed.Status != nil {
		got, _, _ := unstructured.NestedString(live.Object, "status", "state")
		if got != closed.Status["state"] {
			c.Fields = append(c.Fields, fmt.Sprintf("status.state: %v -> %v", display(got), closed.Status["state"]))
		}
	}
	c.Action = Unchanged
	if len(c.Fields) > 0 {
		c.Action = Close
	}
	return c, nil
}

// closedObject is what Sync applies to close a queue kind: the live
// object's spec with the scheduler's closest "accept nothing new" setting.
// Volcano: state Closed. KAI has no state: GPU quota and limit 0. Kueue:
// stopPolicy Hold (admitted workloads keep running, nothing new is admitted).
func closedObject(k Kind, live *unstructured.Unstructured) (Object, error) {
	labels := map[string]string{LabelClosed: "true"}
	if t := live.GetLabels()[workload.LabelTenant]; t != "" {
		labels[workload.LabelTenant] = t
	}
	o := newObject(k, live.GetNamespace(), live.GetName(), labels)
	spec, _, _ := unstructured.NestedMap(live.Object, "spec")
	if spec == nil {
		spec = map[string]any{}
	}
	if in, ok := syncOf(k.Scheduler); ok && in.Close != nil {
		status, err := in.Close(live, spec)
		if err != nil {
			return o, fmt.Errorf("unable to close %s %s: %w", k.GVK.Kind, live.GetName(), err)
		}
		o.Status = status
	}
	o.Object["spec"] = spec
	return o, nil
}

func changeFor(u *unstructured.Unstructured) Change {
	return Change{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

func objectKey(u *unstructured.Unstructured) string {
	return u.GroupVersionKind().GroupKind().String() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// immutable reports whether an apply was refused only because it changes
// a field the API server keeps immutable (a PriorityClass's value, a
// Topology's levels, a LocalQueue's ClusterQueue): such an object is
// recreated. Any other invalid object is an error, never a deletion.
func immutable(err error) bool {
	if !apierrors.IsInvalid(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if !strings.Contains(c.Message, "immutable") && !strings.Contains(c.Message, "may not be changed") {
			return false
		}
	}
	return true
}
