package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/audit"
	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/workload"
)

var update = flag.Bool("update", false, "rewrite testdata/admitted.yaml")

const (
	rawSnapshot      = "testdata/snapshot.yaml"
	admittedSnapshot = "testdata/admitted.yaml"
)

// defaultPolicy is the embedded authority model, as `mandate serve` runs it.
func defaultPolicy(t *testing.T) *evaluator.Evaluator {
	t.Helper()
	return fixtures.Evaluator(t, "embedded", nil)
}

type unstructuredObj = unstructured.Unstructured

// policyWith is the embedded model with its tenants edited, as revision
// "candidate".
func policyWith(t *testing.T, edit func(tenants map[string]any)) *evaluator.Evaluator {
	t.Helper()
	return fixtures.Evaluator(t, "candidate", func(model map[string]any) { edit(model["tenants"].(map[string]any)) })
}

// candidatePolicy is the embedded model with the edits of a promotion:
// research-vision's ceiling cut to 4 GPUs, the build class taken from
// product, and research-llm moved to another queue.
func candidatePolicy(t *testing.T) *evaluator.Evaluator {
	t.Helper()
	return policyWith(t, func(tenants map[string]any) {
		tenants["research-vision"].(map[string]any)["quota"] = map[string]any{"nvidia.com/gpu": map[string]any{"guaranteed": 4, "ceiling": 4}}
		tenants["product"].(map[string]any)["priorityClasses"] = []any{"train", "build-preemptible", "inference"}
		tenants["research-llm"].(map[string]any)["queue"] = "llm-v2"
	})
}

func run(t *testing.T, inv *inventory.Inventory, ev *evaluator.Evaluator) *audit.Report {
	t.Helper()
	rep, err := audit.Audit(context.Background(), inv, audit.Options{Decider: ev, Model: ev.Model(), Revision: ev.Revision()})
	require.NoError(t, err)
	return rep
}

// verdicts maps "kind ns/name" to the verdict and, for denials, the codes.
func verdicts(rep *audit.Report) map[string]string {
	out := map[string]string{}
	for _, r := range rep.Workloads {
		v := string(r.Verdict)
		for _, viol := range r.Violations {
			v += " " + viol.Code
		}
		out[r.Workload.String()] = v
	}
	return out
}

// admit returns the objects of a snapshot as the webhook would have stored
// them: each owner and standalone pod decided by the default policy in a
// cluster of only nodes and namespaces (an empty cluster), and mutated;
// pods of owners rendered with their owner's directives.
func admit(t *testing.T, inv *inventory.Inventory) []*unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	ev := defaultPolicy(t)
	state, err := cluster.New(ev.Model())
	require.NoError(t, err)
	for _, obj := range slices.Concat(inv.Nodes, inv.Namespaces) {
		require.NoError(t, state.Add(obj))
	}
	r := &review.Service{Decider: ev, State: state}
	req := evaluator.Request{Operation: "CREATE", User: "admin", DryRun: true}
	directives := map[string]evaluator.Directives{}
	var out []*unstructured.Unstructured
	out = append(out, inv.Nodes...)
	out = append(out, inv.Namespaces...)
	decide := func(obj *unstructured.Unstructured) *unstructured.Unstructured {
		if slices.Contains(review.SystemNamespaces, obj.GetNamespace()) {
			return obj
		}
		rv, err := r.Review(ctx, obj, req)
		require.NoError(t, err)
		require.True(t, rv.Decision.Allowed, "%s %s: %v", obj.GetKind(), obj.GetName(), rv.Decision.Violations)
		directives[obj.GetName()] = rv.Decision.Directives
		return rv.Mutated
	}
	for _, obj := range inv.Owners {
		out = append(out, decide(obj))
	}
	for _, pod := range inv.Pods {
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil {
			out = append(out, decide(pod))
			continue
		}
		d, ok := directives[ref.Name]
		if !ok {
			out = append(out, pod)
			continue
		}
		w, err := workload.Normalize(pod)
		require.NoError(t, err)
		mutated, err := scheduler.Render(pod, w, d)
		require.NoError(t, err)
		out = append(out, mutated)
	}
	return out
}

// TestAdmittedSnapshotIsCurrent keeps testdata/admitted.yaml what admit
// makes of testdata/snapshot.yaml (go test -run Current -update rewrites it).
func TestAdmittedSnapshotIsCurrent(t *testing.T) {
	inv, err := inventory.ReadSnapshot(rawSnapshot)
	require.NoError(t, err)
	var buf bytes.Buffer
	buf.WriteString("# Generated from snapshot.yaml by TestAdmittedSnapshotIsCurrent (-update):\n" +
		"# the same cluster with every workload as the default authority model admitted it.\n")
	for _, obj := range admit(t, inv) {
		b, err := yaml.Marshal(obj.Object)
		require.NoError(t, err)
		buf.WriteString("---\n")
		buf.Write(b)
	}
	if *update {
		require.NoError(t, os.WriteFile(admittedSnapshot, buf.Bytes(), 0o600))
	}
	want, err := os.ReadFile(admittedSnapshot)
	require.NoError(t, err, "run go test ./audit -run Current -update")
	require.Equal(t, string(want), buf.String(), "run go test ./audit -run Current -update")
}

// reportJSON is the report as audit.WriteJSON writes it.
func reportJSON(t *testing.T, rep *audit.Report) map[string]any {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, audit.WriteJSON(&buf, rep))
	return fixtures.JSONMap(t, json.RawMessage(buf.Bytes()))
}
