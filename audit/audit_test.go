package audit_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/audit"
	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/review"
)

func readSnapshot(t *testing.T, path string) *inventory.Inventory {
	t.Helper()
	inv, err := inventory.ReadSnapshot(path)
	require.NoError(t, err)
	return inv
}

// The workloads of the test cluster, in report order.
var allWorkloads = []string{
	"PyTorchJob llm/pretrain", "Pod platform/ci-runner", "Job product/finetune", "Pod product/serve-0",
	"VolcanoJob vision/sweep", "Pod vision/tensorboard", "Pod vision/vit-0",
}

// candidateVerdicts is what candidatePolicy makes of the admitted cluster:
// exactly two denials, one change (the queue), the rest as they are.
var candidateVerdicts = map[string]string{
	"Job product/finetune":    "would-deny PRIORITY_NOT_ALLOWED",
	"Pod vision/vit-0":        "would-deny QUOTA_EXCEEDS_CEILING",
	"PyTorchJob llm/pretrain": "would-change",
	"Pod platform/ci-runner":  "unchanged",
	"Pod product/serve-0":     "unchanged",
	"VolcanoJob vision/sweep": "unchanged",
	"Pod vision/tensorboard":  "unchanged",
}

func TestDefaultPolicyOnUnmarkedClusterDeniesNothing(t *testing.T) {
	rep := run(t, readSnapshot(t, rawSnapshot), defaultPolicy(t))

	want := map[string]string{}
	for _, w := range allWorkloads {
		want[w] = string(audit.VerdictChange) // nothing carries Mandate's marks yet
	}
	assert.Equal(t, want, verdicts(rep))
	assert.Equal(t, audit.Summary{Workloads: 7, Changed: 7}, rep.Summary)
	for _, r := range rep.Workloads {
		// Every GPU of the cluster is in use: only because each workload's
		// own pods are taken out does it fit (no TOPOLOGY_WAITS) and stay
		// within its quota.
		assert.Empty(t, r.Warnings, r.Workload.String())
		assert.Contains(t, r.Differences[0], "not admitted by Mandate yet", r.Workload.String())
	}
	pretrain := rep.Workloads[0]
	require.Equal(t, "PyTorchJob llm/pretrain", pretrain.Workload.String())
	assert.Equal(t, audit.Subtracted{Pods: 4, GPUs: map[string]int{"nvidia.com/gpu": 32}}, pretrain.Subtracted)
	assert.Equal(t, "research-llm", pretrain.Workload.Tenant)
	assert.Equal(t, []string{
		"2 finished workload(s) not audited: they hold no GPUs and are never admitted again",
		"1 workload(s) in namespaces Mandate never governs ([kube-system kube-public kube-node-lease]) not audited",
	}, rep.Notes)
}

// Without the subtraction the same decision is not clean: the cluster is
// full, so the gang would have to wait for its own GPUs.
func TestOwnPodsAreWhatMakesItFit(t *testing.T) {
	inv := readSnapshot(t, rawSnapshot)
	ev := defaultPolicy(t)
	state, err := cluster.New(ev.Model())
	require.NoError(t, err)
	for _, group := range [][]*unstructuredObj{inv.Nodes, inv.Namespaces, inv.Pods} {
		for _, obj := range group {
			require.NoError(t, state.Add(obj))
		}
	}
	var pretrain *unstructuredObj
	for _, o := range inv.Owners {
		if o.GetName() == "pretrain" {
			pretrain = o
		}
	}
	rv, err := (&review.Service{Decider: ev, State: state}).Review(context.Background(), pretrain,
		evaluator.Request{Operation: "CREATE", DryRun: true})
	require.NoError(t, err)
	require.NotEmpty(t, rv.Decision.Warnings)
	assert.Contains(t, strings.Join(rv.Decision.Warnings, "\n"), "does not fit right now")
}

func TestDefaultPolicyOnAdmittedClusterChangesNothing(t *testing.T) {
	rep := run(t, readSnapshot(t, admittedSnapshot), defaultPolicy(t))
	want := map[string]string{}
	for _, w := range allWorkloads {
		want[w] = string(audit.VerdictUnchanged)
	}
	assert.Equal(t, want, verdicts(rep))
	assert.Equal(t, audit.Summary{Workloads: 7, Unchanged: 7}, rep.Summary)
	for _, r := range rep.Workloads {
		assert.Empty(t, r.Changes, r.Workload.String())
		assert.Empty(t, r.Warnings, r.Workload.String())
	}
}

func TestCandidateListsExactlyWhatItWouldDeny(t *testing.T) {
	rep := run(t, readSnapshot(t, admittedSnapshot), candidatePolicy(t))

	assert.Equal(t, candidateVerdicts, verdicts(rep))
	assert.Equal(t, audit.Summary{Workloads: 7, Denied: 2, Changed: 1, Unchanged: 4, Warned: 1}, rep.Summary)
	assert.Equal(t, "candidate", rep.Revision)

	byName := map[string]audit.Result{}
	for _, r := range rep.Workloads {
		byName[r.Workload.String()] = r
	}
	finetune := byName["Job product/finetune"]
	assert.Equal(t, evaluator.DimensionPriority, finetune.Violations[0].Dimension)
	assert.Contains(t, finetune.Violations[0].Message, "priority class build (100) is above tenant product's tier")
	assert.Nil(t, finetune.Directives)
	vit := byName["Pod vision/vit-0"]
	assert.Contains(t, vit.Violations[0].Message, "the workload needs 6 nvidia.com/gpu but tenant research-vision's ceiling is 4")

	pretrain := byName["PyTorchJob llm/pretrain"]
	assert.Equal(t, []string{"queue: research-llm -> llm-v2"}, pretrain.Differences)
	var paths []string
	for _, c := range pretrain.Changes {
		paths = append(paths, c.Path)
		if strings.HasSuffix(c.Path, "queue-name") {
			assert.Equal(t, "research-llm", c.From)
			assert.Equal(t, "llm-v2", c.To)
		}
	}
	assert.Contains(t, paths, "/spec/pytorchReplicaSpecs/Worker/template/metadata/annotations/scheduling.volcano.sh~1queue-name")

	// The sweep is admitted, but the lowered ceiling is busy: it says so.
	sweep := byName["VolcanoJob vision/sweep"]
	require.Len(t, sweep.Warnings, 1)
	assert.Contains(t, sweep.Warnings[0], "tenant research-vision uses 6 of its 4 nvidia.com/gpu ceiling")
}

// The guarantee check counts the workload once: at a guarantee exactly
// equal to product's non-preemptible use nothing changes; one GPU less and
// both of its non-preemptible workloads would turn preemptible.
func TestOwnUsageIsSubtractedExactly(t *testing.T) {
	inv := readSnapshot(t, admittedSnapshot)
	for _, tc := range []struct {
		guaranteed int
		want       string
	}{
		{guaranteed: 24, want: string(audit.VerdictUnchanged)},
		{guaranteed: 23, want: string(audit.VerdictChange)},
	} {
		p := policyWith(t, func(tenants map[string]any) {
			tenants["product"].(map[string]any)["quota"].(map[string]any)["nvidia.com/gpu"] =
				map[string]any{"guaranteed": tc.guaranteed, "ceiling": 160}
		})
		got := verdicts(run(t, inv, p))
		assert.Equal(t, tc.want, got["Job product/finetune"], "guaranteed %d", tc.guaranteed)
		assert.Equal(t, tc.want, got["Pod product/serve-0"], "guaranteed %d", tc.guaranteed)
		assert.Equal(t, string(audit.VerdictUnchanged), got["PyTorchJob llm/pretrain"])
	}
	p := policyWith(t, func(tenants map[string]any) {
		tenants["product"].(map[string]any)["quota"].(map[string]any)["nvidia.com/gpu"] =
			map[string]any{"guaranteed": 23, "ceiling": 160}
	})
	for _, r := range run(t, inv, p).Workloads {
		if r.Workload.Name == "finetune" {
			assert.Equal(t, []string{"preemptible: false -> true", "priorityClass: build -> build-borrowed"}, r.Differences)
			assert.Contains(t, r.Warnings[0], "tenant product has 8 of 23 guaranteed nvidia.com/gpu in non-preemptible use and this workload needs 16 more")
		}
	}
}

func TestNamespaceAndExemptions(t *testing.T) {
	ev := defaultPolicy(t)
	rep, err := audit.Audit(context.Background(), readSnapshot(t, admittedSnapshot), audit.Options{
		Decider: ev, Model: ev.Model(), Namespace: "vision",
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"VolcanoJob vision/sweep": "unchanged", "Pod vision/tensorboard": "unchanged", "Pod vision/vit-0": "unchanged"}, verdicts(rep))
	// The other namespaces' pods still count: vit-0 fits only on its own node.
	for _, r := range rep.Workloads {
		assert.Empty(t, r.Warnings, r.Workload.String())
	}

	rep, err = audit.Audit(context.Background(), readSnapshot(t, admittedSnapshot), audit.Options{
		Decider: ev, Model: ev.Model(), Exempt: []string{"vision", "llm"},
	})
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Summary.Workloads)
}

func TestReportRendering(t *testing.T) {
	rep := run(t, readSnapshot(t, admittedSnapshot), candidatePolicy(t))
	var buf bytes.Buffer
	require.NoError(t, audit.WriteTable(&buf, rep))
	out := buf.String()
	t.Log("\n" + out)
	lines := strings.Split(out, "\n")
	require.GreaterOrEqual(t, len(lines), 12)
	header := lines[2]
	assert.Regexp(t, `^WORKLOAD +TENANT +VERDICT +WHY$`, header)
	col := strings.Index(header, "VERDICT")
	for i, want := range []string{"WOULD DENY", "WOULD DENY", "WOULD CHANGE", "UNCHANGED"} {
		assert.Equal(t, want, lines[3+i][col:col+len(want)], "row %d is aligned and sorted", i)
	}
	assert.Contains(t, lines[3], "Job product/finetune")
	assert.Contains(t, out, "7 workloads: 2 would be denied, 1 changed, 4 unchanged (1 admitted with warnings)\n")
	assert.Contains(t, out, "   DENY    [priority] PRIORITY_NOT_ALLOWED: priority class build (100)")
	assert.Contains(t, out, "   CHANGE  queue: research-llm -> llm-v2")
	assert.Contains(t, out, "/scheduling.volcano.sh~1queue-name: research-llm -> llm-v2")

	js := reportJSON(t, rep)
	assert.Equal(t, map[string]any{"workloads": 7.0, "denied": 2.0, "changed": 1.0, "unchanged": 4.0, "warned": 1.0}, js["summary"])
	first := js["workloads"].([]any)[0].(map[string]any)
	assert.Equal(t, "would-deny", first["verdict"])
	assert.Equal(t, "PRIORITY_NOT_ALLOWED", first["violations"].([]any)[0].(map[string]any)["code"])
	for _, w := range js["workloads"].([]any) {
		for _, key := range []string{"violations", "warned", "dryrun", "warnings", "changes", "differences"} {
			assert.NotNil(t, w.(map[string]any)[key], "%s is a list, never null", key)
		}
	}
}

func TestReadSnapshotErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	for _, tc := range []struct {
		name, path, wantErr string
	}{
		{"missing", filepath.Join(dir, "nope.yaml"), "unable to read cluster snapshot"},
		{"not YAML", write("bad.yaml", "kind: [unclosed\n"), "document 0 is not valid YAML or JSON"},
		{"no workloads", write("nodes.yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  name: n0\n"), "holds no Pod, Job, PyTorchJob or Volcano Job to audit"},
		{"malformed pod", write("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers: 3\n"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv, err := inventory.ReadSnapshot(tc.path)
			if tc.wantErr == "" {
				require.NoError(t, err)
				ev := defaultPolicy(t)
				_, err = audit.Audit(context.Background(), inv, audit.Options{Decider: ev, Model: ev.Model()})
				require.ErrorContains(t, err, `malformed Pod /p`)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}
