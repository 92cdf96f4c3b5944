package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/openreports"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// reportsInterval is the background audit's interval in the test: short,
// so that each step waits a few seconds, not minutes.
const reportsInterval = 2 * time.Second

// TestOpenReportsBackgroundAudit: a dryrun install (every violation
// admitted and recorded) with the background audit on. While another
// replica holds the audit's Lease, no Report is written. Once this replica
// leads, the workloads that violate the model appear in a Report in their
// namespaces with rule, dimension, severity and revision; a workload fixed
// loses its result (and its namespace's Report, then empty, goes) while the
// other Report is not written again; a new bundle revision re-audits.
func TestOpenReportsBackgroundAudit(t *testing.T) {
	bundlePath := filepath.Join(t.TempDir(), "bundle.tar.gz")
	publishRevision(t, bundlePath, "reports-r1", nil)
	s := startWith(t, startOptions{
		env: []envtest.Option{envtest.WithOpenReportsCRDs()},
		prepare: func(t *testing.T, env *envtest.Env) {
			now := metav1.NewMicroTime(time.Now())
			lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: mandateNamespace, Name: openreports.LeaseName},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("another-replica"), LeaseDurationSeconds: ptr.To(int32(3600)),
					AcquireTime: &now, RenewTime: &now}}
			if err := env.Client.Create(context.Background(), lease); err != nil {
				t.Fatalf("unable to create the Lease another replica holds: %v", err)
			}
		},
		config: func(c *config.Serve) {
			c.Bundle.Source, c.Bundle.Interval = bundlePath, 200*time.Millisecond
			c.Evaluation.EnforcementOverride = config.EnforcementDryRun
			c.OpenReports.Enabled, c.OpenReports.Interval = true, reportsInterval
		},
	})
	s.populate(t)
	ctx := context.Background()
	c := s.env.Client
	if err := v1alpha1.Install(c.Scheme()); err != nil {
		t.Fatal(err)
	}
	// Admitted under dryrun: research-vision may not use "build"
	// (priority); "default" has no tenant (tenancy).
	job := s.create(t, visionUrgent)
	pod := s.create(t, scratchPod)

	// Not the leader: several intervals pass and nothing is written.
	time.Sleep(3 * reportsInterval)
	if got := reports(t, c); len(got) != 0 {
		t.Fatalf("a replica that does not hold the Lease wrote %d Report(s), want none: %v", len(got), got)
	}

	// The Lease is free: this replica takes it and writes.
	if err := c.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: mandateNamespace, Name: openreports.LeaseName}}); err != nil {
		t.Fatal(err)
	}
	var vision, scratch v1alpha1.ReportResult
	envtest.WaitFor(t, 60*time.Second, "the Reports of vision and default", func() bool {
		var ok1, ok2 bool
		vision, ok1 = result(t, c, "vision", job, "PRIORITY_NOT_ALLOWED")
		scratch, ok2 = result(t, c, "default", pod, "TENANT_MISSING")
		return ok1 && ok2
	})
	for _, tc := range []struct {
		r             v1alpha1.ReportResult
		wantDimension evaluator.Dimension
	}{{vision, evaluator.DimensionPriority}, {scratch, evaluator.DimensionTenancy}} {
		if tc.r.Category != string(tc.wantDimension) || tc.r.Policy != openreports.PolicyActive || tc.r.Result != "fail" ||
			tc.r.Severity != "low" || tc.r.Source != openreports.Source || tc.r.Description == "" ||
			tc.r.Properties[openreports.PropertyRevision] != "reports-r1" ||
			tc.r.Properties[openreports.PropertyEnforcement] != evaluator.EnforceDryRun {
			t.Errorf("result %+v, want category %s, policy %s, result fail, severity low (dryrun), a message, revision reports-r1",
				tc.r, tc.wantDimension, openreports.PolicyActive)
		}
	}
	stored := report(t, c, "default")
	if !managedBy(stored, openreports.FieldManager) {
		t.Errorf("Report default/%s managedFields %v, want applied by %s", stored.Name, stored.ManagedFields, openreports.FieldManager)
	}
	if stored.Summary.Fail != len(stored.Results) {
		t.Errorf("summary %+v, want fail = %d results", stored.Summary, len(stored.Results))
	}

	// Fixed as Mandate tells: deleted and created again with "train", one
	// of research-vision's classes (under another name: no garbage
	// collector removes the first one's PodGroup here).
	fixed := strings.ReplaceAll(visionUrgent, "priorityClassName: build", "priorityClassName: train")
	job = recreate(t, s, job, strings.Replace(fixed, "name: detr-urgent", "name: detr-fixed", 1))
	envtest.WaitFor(t, 60*time.Second, "the fixed PyTorchJob's result, and vision's then empty Report, to go", func() bool {
		var r v1alpha1.Report
		err := c.Get(ctx, client.ObjectKey{Namespace: "vision", Name: openreports.ReportName}, &r)
		return apierrors.IsNotFound(err)
	})
	if again := report(t, c, "default"); again.ResourceVersion != stored.ResourceVersion {
		t.Errorf("Report default/%s was written again (resourceVersion %s -> %s) though its results did not change",
			again.Name, stored.ResourceVersion, again.ResourceVersion)
	}

	// A new revision takes "train" from research-vision: re-audited.
	publishRevision(t, bundlePath, "reports-r2", func(model map[string]any) {
		model["tenants"].(map[string]any)["research-vision"].(map[string]any)["priorityClasses"] = []any{"build-preemptible"}
	})
	envtest.WaitFor(t, 60*time.Second, "the Reports of revision reports-r2", func() bool {
		v, ok1 := result(t, c, "vision", job, "PRIORITY_NOT_ALLOWED")
		d, ok2 := result(t, c, "default", pod, "TENANT_MISSING")
		return ok1 && ok2 && v.Properties[openreports.PropertyRevision] == "reports-r2" &&
			d.Properties[openreports.PropertyRevision] == "reports-r2"
	})
}

// publishRevision builds a bundle of the default policies, its model
// changed by edit, and renames it into place at path.
func publishRevision(t *testing.T, path, revision string, edit func(model map[string]any)) {
	t.Helper()
	if edit == nil {
		edit = func(map[string]any) {}
	}
	b, err := bundles.Build(context.Background(), fixtures.PolicyDir(t, edit), bundles.BuildOptions{Revision: revision})
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := bundles.WriteFile(tmp, b); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// reports lists every Report in the cluster.
func reports(t *testing.T, c client.Client) []string {
	t.Helper()
	var list v1alpha1.ReportList
	if err := c.List(context.Background(), &list); err != nil {
		t.Fatalf("list Reports: %v", err)
	}
	var names []string
	for _, r := range list.Items {
		names = append(names, r.Namespace+"/"+r.Name)
	}
	return names
}

// report is Mandate's Report in namespace ns.
func report(t *testing.T, c client.Client, ns string) *v1alpha1.Report {
	t.Helper()
	var r v1alpha1.Report
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: openreports.ReportName}, &r); err != nil {
		t.Fatalf("get Report %s/%s: %v", ns, openreports.ReportName, err)
	}
	return &r
}

// result is the result of rule for obj in Mandate's Report of ns, if any.
func result(t *testing.T, c client.Client, ns string, obj *unstructured.Unstructured, rule string) (v1alpha1.ReportResult, bool) {
	t.Helper()
	var r v1alpha1.Report
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: openreports.ReportName}, &r); err != nil {
		if !apierrors.IsNotFound(err) {
			t.Fatalf("get Report %s/%s: %v", ns, openreports.ReportName, err)
		}
		return v1alpha1.ReportResult{}, false
	}
	for _, res := range r.Results {
		if res.Rule != rule || len(res.Subjects) != 1 {
			continue
		}
		if s := res.Subjects[0]; s.Kind == obj.GetKind() && s.Name == obj.GetName() && s.UID == obj.GetUID() {
			return res, true
		}
	}
	return v1alpha1.ReportResult{}, false
}

// managedBy says whether manager applied fields of obj.
func managedBy(obj metav1.Object, manager string) bool {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == manager && f.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// recreate deletes obj, waits until it is gone and creates manifest.
func recreate(t *testing.T, s *suite, obj *unstructured.Unstructured, manifest string) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	if err := s.env.Client.Delete(ctx, obj); err != nil {
		t.Fatalf("delete %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	envtest.WaitFor(t, 30*time.Second, fmt.Sprintf("%s %s to be gone", obj.GetKind(), obj.GetName()), func() bool {
		return apierrors.IsNotFound(s.env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopy()))
	})
	return s.create(t, manifest)
}
