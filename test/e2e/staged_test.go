package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/webhook"
)

// TestStagedEnforcement is the acceptance test of staged enforcement: one
// workload, a PyTorchJob at a priority class above its tenant's tiers
// (PRIORITY_NOT_ALLOWED), is created through the real API server while the
// governance team moves that rule from dryrun to warn to deny by editing
// only the enforcement data of the bundle mandate serve polls.
//   - dryrun: created, the client sees no warning, and the API server's
//     audit event carries the rule's code;
//   - warn: created, and the client receives the violation as a warning;
//   - deny: Forbidden, with the violation's message.
func TestStagedEnforcement(t *testing.T) {
	dir := t.TempDir()
	bundlePath := filepath.Join(dir, "bundle.tar.gz")
	publishStage(t, bundlePath, "dryrun")
	s := startWith(t, startOptions{
		env: []envtest.Option{envtest.WithAuditLog()},
		config: func(c *config.Serve) {
			c.Bundle.Source, c.Bundle.Interval = bundlePath, 100*time.Millisecond
		},
	})
	s.populate(t)
	ctx := context.Background()

	warnings := &warningRecorder{}
	cfg := rest.CopyConfig(s.env.Config)
	cfg.WarningHandlerWithContext = warnings
	c, err := client.New(cfg, client.Options{Scheme: s.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	const code = "PRIORITY_NOT_ALLOWED"
	for _, stage := range []string{evaluator.EnforceDryRun, evaluator.EnforceWarn, evaluator.EnforceDeny} {
		t.Run(stage, func(t *testing.T) {
			if stage != evaluator.EnforceDryRun {
				publishStage(t, bundlePath, stage)
			}
			envtest.WaitFor(t, 30*time.Second, "revision "+stageRevision(stage)+" to activate", func() bool {
				return s.srv.Activator.Status().Revision == stageRevision(stage)
			})
			// What the active revision decides, as a dry run (nothing reserved).
			r := review.Service{Decider: s.srv.Activator.Current(), State: s.srv.State}
			review, err := r.Review(ctx, object(t, visionUrgent), evaluator.Request{Operation: "CREATE", User: "admin", DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			d := review.Decision
			violation := findViolation(t, d, stage, code)

			warnings.reset()
			obj := object(t, visionUrgent)
			err = c.Create(ctx, obj)
			got := warnings.get()
			switch stage {
			case evaluator.EnforceDryRun:
				if err != nil {
					t.Fatalf("Create() error = %v, want created", err)
				}
				if got := policyWarnings(got); len(got) != 0 {
					t.Errorf("client warnings = %q, want none under dryrun", got)
				}
				annotations := auditAnnotations(t, s.env, obj)
				key := webhook.MutatingWebhookName + "/" + webhook.AuditDryRunViolations
				if annotations[key] != code {
					t.Errorf("audit annotation %s = %q, want %q (annotations %v)", key, annotations[key], code, annotations)
				}
				if rev := annotations[webhook.MutatingWebhookName+"/"+webhook.AuditPolicyRevision]; rev != stageRevision(stage) {
					t.Errorf("audit annotation of the revision = %q, want %q", rev, stageRevision(stage))
				}
			case evaluator.EnforceWarn:
				if err != nil {
					t.Fatalf("Create() error = %v, want created", err)
				}
				want := code + ": " + violation.Message
				if !containsString(got, want) {
					t.Errorf("client warnings = %q, want %q", got, want)
				}
			case evaluator.EnforceDeny:
				if !apierrors.IsForbidden(err) {
					t.Fatalf("Create() error = %v, want Forbidden", err)
				}
				if !strings.Contains(err.Error(), violation.Message) {
					t.Errorf("error %q lacks the violation %q", err, violation.Message)
				}
				if len(got) != 0 {
					t.Errorf("client warnings = %q, want none on a denial", got)
				}
				return
			}
			expect(t, obj, "spec.pytorchReplicaSpecs.Worker.template.spec.priorityClassName", "build")
			if err := c.Delete(ctx, obj); err != nil {
				t.Fatalf("Delete() error = %v", err)
			}
			envtest.WaitFor(t, 10*time.Second, "the PyTorchJob to be gone", func() bool {
				return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(obj), object(t, visionUrgent)))
			})
		})
	}
}

func stageRevision(stage string) string { return "staged-" + stage }

// publishStage builds a bundle of the default policies with
// PRIORITY_NOT_ALLOWED at stage, changing only data.json, and renames it
// into place at path, as a governance team's CI would publish it.
func publishStage(t *testing.T, path, stage string) {
	t.Helper()
	dir := fixtures.PolicyDir(t, func(model map[string]any) {
		model["enforcement"].(map[string]any)["PRIORITY_NOT_ALLOWED"] = stage
	})
	b, err := bundles.Build(context.Background(), dir, bundles.BuildOptions{Revision: stageRevision(stage)})
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

// findViolation returns the decision's violation of code, which must sit
// in the list of its stage with that enforcement.
func findViolation(t *testing.T, d evaluator.Decision, stage, code string) evaluator.Violation {
	t.Helper()
	list := map[string][]evaluator.Violation{
		evaluator.EnforceDeny: d.Violations, evaluator.EnforceWarn: d.Warned, evaluator.EnforceDryRun: d.DryRun,
	}[stage]
	for _, v := range list {
		if v.Code == code && v.Enforcement == stage {
			return v
		}
	}
	t.Fatalf("decision has no %s-stage %s: %+v", stage, code, d)
	return evaluator.Violation{}
}

// auditAnnotations waits for the audit event of obj's create and returns
// its annotations.
func auditAnnotations(t *testing.T, env *envtest.Env, obj client.Object) map[string]string {
	t.Helper()
	var found map[string]string
	envtest.WaitFor(t, 10*time.Second, "the audit event of the create", func() bool {
		events, err := env.AuditedCreates()
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			if ev.ObjectRef.Namespace == obj.GetNamespace() && ev.ObjectRef.Name == obj.GetName() {
				found = ev.Annotations
				return true
			}
		}
		return false
	})
	return found
}

// warningRecorder keeps the warnings the API server returns to a client.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

func (w *warningRecorder) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = nil
}

func (w *warningRecorder) get() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.warnings...)
}

// policyWarnings drops the warnings about the cluster's scheduler objects
// (a queue this suite never creates), keeping the policy's.
func policyWarnings(list []string) []string {
	var out []string
	for _, w := range list {
		if !strings.HasSuffix(w, "run `mandate sync`") {
			out = append(out, w)
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
