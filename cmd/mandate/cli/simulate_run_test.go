package cli

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/simulate/replay"
)

const (
	exampleTrace = "../../../examples/simulate/trace.jsonl"
)

// candidatePolicies writes the default policies to a directory with
// research-llm's GPU ceiling set to ceiling: the candidate a governance
// pull request would propose.
func candidatePolicies(t *testing.T, ceiling int) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, fs.WalkDir(policies.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(policies.FS, path)
		if err != nil {
			return err
		}
		if path == "mandate/model/data.json" {
			var doc map[string]any
			require.NoError(t, json.Unmarshal(b, &doc))
			q := doc["tenants"].(map[string]any)["research-llm"].(map[string]any)["quota"].(map[string]any)["nvidia.com/gpu"].(map[string]any)
			q["ceiling"] = ceiling
			q["guaranteed"] = min(ceiling, int(q["guaranteed"].(float64)))
			if b, err = json.Marshal(doc); err != nil {
				return err
			}
		}
		out := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	}))
	return dir
}

func simulateOutcome(t *testing.T, out string) replay.Outcome {
	t.Helper()
	var o replay.Outcome
	require.NoError(t, json.Unmarshal([]byte(out), &o), out)
	return o
}

func tenantOf(t *testing.T, r *replay.Report, name string) replay.TenantStats {
	t.Helper()
	for _, ts := range r.Tenants {
		if ts.Tenant == name {
			return ts
		}
	}
	t.Fatalf("no tenant %s in %+v", name, r.Tenants)
	return replay.TenantStats{}
}

// TestSimulateRunLowerCeiling: a candidate lowering research-llm's ceiling
// from 256 to 128 GPUs makes its pre-training gangs (64 GPUs each) wait for
// each other: its p95 and maximum waits grow, and a --fail-if on the p95
// exits 1 naming what it compared.
func TestSimulateRunLowerCeiling(t *testing.T) {
	cand := candidatePolicies(t, 128)
	code, out, errText := run(t, "simulate", "run", "--trace", exampleTrace, "--cluster", exampleCluster,
		"--candidate", cand, "--fail-if", "wait.p95[research-llm] > +20%", "--fail-if", "denied[guaranteed] > +0", "-o", "json")
	require.Equal(t, 1, code, errText)
	o := simulateOutcome(t, out)
	require.NotNil(t, o.Candidate)
	base, next := tenantOf(t, o.Baseline, "research-llm"), tenantOf(t, o.Candidate, "research-llm")
	assert.Greater(t, next.WaitP95, base.WaitP95*1.2, "p95 wait grows by more than 20%%")
	assert.Greater(t, next.WaitMax, base.WaitMax)
	require.Len(t, o.FailIf, 1, "the wait check holds, no guaranteed workload is denied more")
	assert.True(t, strings.HasPrefix(o.FailIf[0], "wait.p95[research-llm] > +20%"), o.FailIf[0])
	var d replay.TenantDelta
	for _, x := range o.Deltas {
		if x.Tenant == "research-llm" {
			d = x
		}
	}
	assert.Equal(t, next.WaitP95-base.WaitP95, d.WaitP95)

	// The table says the same for people, and still exits 1.
	code, out, errText = run(t, "simulate", "run", "--trace", exampleTrace, "--cluster", exampleCluster,
		"--candidate", cand, "--fail-if", "wait.p95[research-llm] > +20%")
	require.Equal(t, 1, code, errText)
	assert.Contains(t, out, "CHANGE (candidate - baseline)")
	assert.Contains(t, out, "fail-if held: wait.p95[research-llm] > +20%")
}

// TestSimulateRunUnchangedCandidate: the same policies as candidate change
// nothing: every delta is zero and no --fail-if holds.
func TestSimulateRunUnchangedCandidate(t *testing.T) {
	code, out, errText := run(t, "simulate", "run", "--trace", exampleTrace, "--cluster", exampleCluster,
		"--candidate", candidatePolicies(t, 256), "--fail-if", "wait.p95[research-llm] > +0%",
		"--fail-if", "stranded_gpu_hours > +0%", "-o", "json")
	require.Equal(t, 0, code, errText)
	o := simulateOutcome(t, out)
	require.NotEmpty(t, o.Deltas)
	for _, d := range o.Deltas {
		assert.Equal(t, replay.TenantDelta{Tenant: d.Tenant}, d)
	}
	assert.Equal(t, o.Baseline.Cluster, o.Candidate.Cluster)
	assert.Empty(t, o.FailIf)
}

// TestSimulateRunFailIfWithoutCandidate: a plain threshold checks the one
// run; a change needs --candidate (bad input, 2); a bad expression is bad
// input.
func TestSimulateRunFailIfWithoutCandidate(t *testing.T) {
	code, out, errText := run(t, "simulate", "run", "--trace", exampleTrace, "--cluster", exampleCluster,
		"--fail-if", "denied[research-vision] > 0")
	require.Equal(t, 1, code, errText)
	assert.Contains(t, out, "fail-if held: denied[research-vision] > 0 = 1")
	code, _, errText = run(t, "simulate", "run", "--trace", exampleTrace, "--cluster", exampleCluster,
		"--fail-if", "wait.p95[research-llm] > +20%")
	require.Equal(t, 2, code)
	assert.Contains(t, errText, "give --candidate")
	code, _, errText = run(t, "simulate", "run", "--trace", exampleTrace, "--cluster", exampleCluster, "--fail-if", "wait.p95 > 3")
	require.Equal(t, 2, code)
	assert.Contains(t, errText, "per tenant")
}

// TestSimulateRunInputFormats: the example trace as CSV decides and runs
// exactly as its JSON lines; an openb pod list (its first 200 pods) runs on
// the openb nodes with tenants mapped; -o html is one page with its plots.
func TestSimulateRunInputFormats(t *testing.T) {
	code, want, errText := run(t, "simulate", "run", "--trace", exampleTrace, "--cluster", exampleCluster, "-o", "json")
	require.Equal(t, 0, code, errText)
	jobs, err := replay.ReadTraceFile(exampleTrace)
	require.NoError(t, err)
	var csv strings.Builder
	csv.WriteString("name,submit,duration,namespace,pods,gpusPerPod,products,priorityClass,class\n")
	for _, j := range jobs {
		csv.WriteString(strings.Join([]string{j.Name, ftoa(j.Submit), ftoa(j.Duration), j.Namespace, itoa(j.Pods), itoa(j.GPUsPerPod),
			strings.Join(j.Products, "|"), j.PriorityClass, j.Class}, ",") + "\n")
	}
	file := filepath.Join(t.TempDir(), "trace.csv")
	require.NoError(t, os.WriteFile(file, []byte(csv.String()), 0o600))
	code, got, errText := run(t, "simulate", "run", "--trace", file, "--cluster", exampleCluster, "-o", "json")
	require.Equal(t, 0, code, errText)
	assert.JSONEq(t, want, got)

	data, err := os.ReadFile(openbPods)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	pods := filepath.Join(t.TempDir(), "pods.csv")
	require.NoError(t, os.WriteFile(pods, []byte(strings.Join(lines[:201], "")), 0o600))
	code, out, errText := run(t, "simulate", "run", "--openb-pods", pods, "--openb-nodes", openbNodes, "--placement", "best-fit", "-o", "json")
	require.Equal(t, 0, code, errText)
	o := simulateOutcome(t, out)
	assert.Equal(t, 200, o.Baseline.Jobs)
	assert.Equal(t, 6212.0, o.Baseline.Cluster.GPUs)
	submitted := 0
	for _, ts := range o.Baseline.Tenants {
		assert.Contains(t, []string{"platform", "product", "research-llm", "research-vision"}, ts.Tenant)
		submitted += ts.Submitted
	}
	assert.Equal(t, 200, submitted)

	gang := filepath.Join(t.TempDir(), "gang.jsonl")
	require.NoError(t, os.WriteFile(gang, []byte(`{"name":"x","submit":0,"duration":3600,"tenant":"research-llm","pods":16,"gpusPerPod":8,"priorityClass":"train"}`+"\n"), 0o600))
	code, out, errText = run(t, "simulate", "run", "--trace", gang, "--reference-nodes", "64", "-o", "json")
	require.Equal(t, 0, code, errText)
	o = simulateOutcome(t, out)
	assert.Equal(t, 512.0, o.Baseline.Cluster.GPUs, "64 reference nodes of 8 GPUs")
	assert.Equal(t, 1, tenantOf(t, o.Baseline, "research-llm").Completed, "a 128-GPU gang fits in one 32-node leaf block")

	code, out, errText = run(t, "simulate", "run", "--trace", exampleTrace, "--cluster", exampleCluster, "-o", "html")
	require.Equal(t, 0, code, errText)
	assert.True(t, strings.HasPrefix(out, "<!DOCTYPE html>"))
	assert.Contains(t, out, `<figure class="chart" data-kind="area" id="alloc-baseline">`)
	assert.Contains(t, out, "TENANT_MISSING")
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
func itoa(i int) string     { return strconv.Itoa(i) }
