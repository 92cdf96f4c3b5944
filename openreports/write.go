package openreports

import (
	"context"
	"errors"
	"fmt"

	v1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/config"
)

// FieldManager owns the fields of Mandate's Reports (server-side apply).
const FieldManager = "mandate-openreports"

// ErrNotInstalled: the API server serves no OpenReports Report kind (its
// CRDs are not installed), so there is nowhere to write.
var ErrNotInstalled = errors.New("the OpenReports CRDs (reports.openreports.io) are not installed")

// Scheme is a scheme of the OpenReports kinds, for a Writer's client.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := v1alpha1.Install(s); err != nil {
		return nil, fmt.Errorf("unable to build the OpenReports scheme: %w", err)
	}
	return s, nil
}

// Writer keeps the Reports labelled as Mandate's equal to a desired set.
type Writer struct {
	// Client reads and writes Reports; its scheme knows them (Scheme).
	Client client.Client
}

// Written counts what one Write did.
type Written struct {
	Applied, Deleted, Unchanged int
}

// Existing lists Mandate's Reports in every namespace (named ReportName
// and labelled as Mandate's: no other Report is ever updated or deleted);
// ErrNotInstalled when the kind is not served.
func (w Writer) Existing(ctx context.Context) ([]v1alpha1.Report, error) {
	var list v1alpha1.ReportList
	if err := w.Client.List(ctx, &list, client.MatchingLabels{config.LabelManagedBy: config.ManagedBy}); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, ErrNotInstalled
		}
		return nil, fmt.Errorf("unable to list the OpenReports Reports: %w", err)
	}
	own := list.Items[:0]
	for _, r := range list.Items {
		if r.Name == ReportName {
			own = append(own, r)
		}
	}
	return own, nil
}

// Write makes Mandate's Reports desired (as Build returns them): each
// one that differs from the one stored (timestamps of results otherwise
// unchanged aside) is applied, each stored one not desired is deleted.
// A result that did not change keeps the timestamp it was first seen at.
func (w Writer) Write(ctx context.Context, desired []*v1alpha1.Report) (Written, error) {
	var n Written
	existing, err := w.Existing(ctx)
	if err != nil {
		return n, err
	}
	stored := map[string]*v1alpha1.Report{}
	for i := range existing {
		r := &existing[i]
		stored[r.Namespace+"/"+r.Name] = r
	}
	for _, d := range desired {
		key := d.Namespace + "/" + d.Name
		old, ok := stored[key]
		delete(stored, key)
		if ok {
			keepTimestamps(d, old)
			if same(d, old) {
				n.Unchanged++
				continue
			}
		}
		if err := w.apply(ctx, d); err != nil {
			return n, err
		}
		n.Applied++
	}
	for _, old := range stored {
		if err := w.Client.Delete(ctx, old, client.Preconditions{UID: &old.UID}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return n, fmt.Errorf("unable to delete the empty Report %s/%s: %w", old.Namespace, old.Name, err)
		}
		n.Deleted++
	}
	return n, nil
}

// apply writes r with server-side apply, owning every field it sets.
func (w Writer) apply(ctx context.Context, r *v1alpha1.Report) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(r)
	if err != nil {
		return fmt.Errorf("unable to encode the Report %s/%s: %w", r.Namespace, r.Name, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Kind: "Report"})
	if err := w.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("unable to apply the Report %s/%s: %w", r.Namespace, r.Name, err)
	}
	return nil
}

// keepTimestamps gives each result of d that old holds unchanged the
// timestamp old has for it.
func keepTimestamps(d, old *v1alpha1.Report) {
	seen := map[string]v1alpha1.ReportResult{}
	for _, r := range old.Results {
		seen[resultKey(r)] = r
	}
	for i := range d.Results {
		r := &d.Results[i]
		prev, ok := seen[resultKey(*r)]
		if !ok {
			continue
		}
		stamp := r.Timestamp
		r.Timestamp = prev.Timestamp
		if !equality.Semantic.DeepEqual(*r, prev) {
			r.Timestamp = stamp
		}
	}
}

// resultKey identifies a result: its policy, rule and workload.
func resultKey(r v1alpha1.ReportResult) string {
	return r.Policy + "|" + r.Rule + "|" + subjectKey(r)
}

// same says whether stored already holds what d says (of the metadata,
// only the label and annotation Mandate sets).
func same(d, stored *v1alpha1.Report) bool {
	return d.Labels[config.LabelManagedBy] == stored.Labels[config.LabelManagedBy] &&
		d.Annotations[AnnotationOmitted] == stored.Annotations[AnnotationOmitted] &&
		d.Source == stored.Source &&
		equality.Semantic.DeepEqual(d.Configuration, stored.Configuration) &&
		d.Summary == stored.Summary &&
		equality.Semantic.DeepEqual(d.Results, stored.Results)
}
