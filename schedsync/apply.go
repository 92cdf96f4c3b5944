package schedsync

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// apply server-side applies obj under FieldManager (taking back fields a
// hand edit took) and returns what the server stored, or would store on a
// dry run.
func (s Syncer) apply(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	u := obj.DeepCopy()
	unstructured.RemoveNestedField(u.Object, "status")
	opts := []client.ApplyOption{client.FieldOwner(FieldManager), client.ForceOwnership}
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := s.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), opts...); err != nil {
		return nil, fmt.Errorf("unable to apply %s %s: %w", obj.GetKind(), displayName(obj), err)
	}
	return u, nil
}

// applyStatus applies the status fields of a kind that has them.
func (s Syncer) applyStatus(ctx context.Context, o Object, dryRun bool) error {
	u := &unstructured.Unstructured{Object: map[string]any{"status": o.Status}}
	u.SetGroupVersionKind(o.GroupVersionKind())
	u.SetName(o.GetName())
	u.SetNamespace(o.GetNamespace())
	opts := []client.SubResourceApplyOption{client.FieldOwner(FieldManager), client.ForceOwnership}
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := s.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), opts...); err != nil {
		return fmt.Errorf("unable to set the status of %s %s: %w", o.GetKind(), displayName(o.Unstructured), err)
	}
	return nil
}

// Apply carries out a plan: creates, updates, recreates and closes in plan
// order, then deletions. With dryRun every write is a server-side dry run.
func (s Syncer) Apply(ctx context.Context, p Plan, dryRun bool) error {
	for _, c := range p.Changes {
		switch c.Action {
		case Create, Update, Close:
			if c.Action == Create && dryRun {
				continue // Plan dry-ran it already
			}
			if _, err := s.apply(ctx, c.desired.Unstructured, dryRun); err != nil {
				return err
			}
			if c.desired.Status != nil && !dryRun {
				if err := s.applyStatus(ctx, c.desired, dryRun); err != nil {
					return err
				}
			}
		case Recreate:
			if err := s.delete(ctx, c.live, dryRun); err != nil {
				return err
			}
			if dryRun {
				continue
			}
			if _, err := s.apply(ctx, c.desired.Unstructured, false); err != nil {
				return err
			}
			if c.desired.Status != nil {
				if err := s.applyStatus(ctx, c.desired, false); err != nil {
					return err
				}
			}
		case Delete:
			if k, _ := kindOf(c.live.GroupVersionKind()); k.Queue && k.StatusFields && !dryRun {
				// A queue closed through its status (Volcano's) is
				// deleted only once closed.
				closed, err := closedObject(k, c.live)
				if err != nil {
					return err
				}
				if closed.Status != nil {
					if err := s.applyStatus(ctx, Object{Unstructured: c.live, Status: closed.Status}, false); err != nil {
						return err
					}
				}
			}
			if err := s.delete(ctx, c.live, dryRun); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s Syncer) delete(ctx context.Context, live *unstructured.Unstructured, dryRun bool) error {
	var opts []client.DeleteOption
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	// Preconditioned on the object read, so one recreated since the plan is
	// not deleted blindly.
	opts = append(opts, client.Preconditions{UID: ptr(live.GetUID())})
	if err := s.Client.Delete(ctx, live, opts...); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("unable to delete %s %s: %w", live.GetKind(), displayName(live), err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

func displayName(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}
