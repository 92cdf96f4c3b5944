package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const exampleCluster = "../../../examples/cluster.yaml"

// run executes mandate with args in-process and returns its exit code,
// standard output and the error text main would print.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err == nil {
		return 0, out.String(), ""
	}
	return exitCode(err), out.String(), err.Error()
}

func manifest(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.yaml")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestEvalExamples(t *testing.T) {
	code, out, _ := run(t, "eval", "-f", "../../../examples/workloads", "--cluster", exampleCluster, "-o", "json")
	require.Equal(t, exitDenied, code)
	var views []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &views))
	outcomes := map[string]string{}
	for _, v := range views {
		name := v["workload"].(map[string]any)["name"].(string)
		switch {
		case !v["allowed"].(bool):
			outcomes[name] = "denied:" + v["violations"].([]any)[0].(map[string]any)["dimension"].(string)
		case len(v["warnings"].([]any)) > 0:
			outcomes[name] = "warned"
		default:
			outcomes[name] = "admitted"
		}
		require.Contains(t, v, "directives")
		require.Contains(t, v, "patch")
	}
	require.Equal(t, map[string]string{
		"notebook-alice": "admitted", "embed-canary": "admitted", "vit-sweep-lr": "admitted",
		"llama-finetune": "warned", "rerank-distill": "warned",
		"detr-urgent": "denied:priority", "ci-gpu-matrix": "denied:quota",
		"pretrain-13b": "denied:topology", "quick-test": "denied:tenancy", "dra-pretrain": "admitted",
	}, outcomes)
}

func TestEvalTurnsWorkPreemptible(t *testing.T) {
	code, out, _ := run(t, "eval", "-f", "../../../examples/workloads/05-product-batch-preemptible.yaml", "--cluster", exampleCluster, "-o", "json")
	require.Equal(t, exitAdmitted, code)
	var v struct {
		Allowed    bool
		Warnings   []string
		Directives struct{ Preemptible bool }
		Patch      []map[string]any
	}
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.True(t, v.Allowed)
	require.True(t, v.Directives.Preemptible)
	require.Contains(t, v.Warnings[0], "112 of 128 guaranteed")
	require.NotEmpty(t, v.Patch)
}

func TestEvalTableNamesLimitAndCurrent(t *testing.T) {
	code, out, _ := run(t, "eval", "-f", "../../../examples/workloads/07-platform-quota-denied.yaml", "--cluster", exampleCluster)
	require.Equal(t, exitDenied, code)
	require.Contains(t, out, "DENIED")
	require.Contains(t, out, "tenant platform's ceiling is 16")
	require.Contains(t, out, "2 in use (2 non-preemptible) + 24 requested")
}

func TestEvalYAML(t *testing.T) {
	code, out, _ := run(t, "eval", "-f", "../../../examples/workloads/01-notebook-admitted.yaml", "--cluster", exampleCluster, "-o", "yaml")
	require.Equal(t, exitAdmitted, code)
	require.Contains(t, out, "allowed: true")
}

func TestEvalBadInput(t *testing.T) {
	pod := func(gpus string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: platform}\nspec:\n  containers:\n  - name: c\n    image: x\n    resources: {limits: {nvidia.com/gpu: \"" + gpus + "\"}}\n"
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"malformed YAML", []string{"-f", manifest(t, "kind: Pod\n  metadata: [")}, "invalid"},
		{"only ungoverned kinds", []string{"-f", manifest(t, "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d}\n")}, "holds no workload of a governed kind"},
		{"absurd quantity", []string{"-f", manifest(t, pod("1e12"))}, "nvidia.com/gpu"},
		{"fractional GPUs", []string{"-f", manifest(t, pod("0.5"))}, "whole number"},
		{"missing fields", []string{"-f", manifest(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: x}\n")}, "spec.containers is required"},
		{"huge object", []string{"-f", manifest(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {a: \""+strings.Repeat("x", 9<<20)+"\"}}\n")}, "more than"},
		{"empty manifest", []string{"-f", manifest(t, "")}, "holds no workload"},
		{"missing manifest", []string{"-f", "does-not-exist.yaml"}, "unable to read manifest"},
		{"bad output", []string{"-f", manifest(t, pod("1")), "-o", "xml"}, "--output"},
		{"bad policies", []string{"-f", manifest(t, pod("1")), "--policies", t.TempDir()}, "no Rego modules"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"eval", "--cluster", exampleCluster}, tc.args...)
			code, _, msg := run(t, args...)
			require.Equal(t, exitBadInput, code, msg)
			require.Contains(t, msg, tc.want)
		})
	}
}

func TestEvalBadCluster(t *testing.T) {
	code, _, msg := run(t, "eval", "-f", "../../../examples/workloads/01-notebook-admitted.yaml", "--cluster", manifest(t, "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\nstatus: {allocatable: 7}\n"))
	require.Equal(t, exitBadInput, code)
	require.Contains(t, msg, `malformed Node "node-1"`)
}

func TestOPACommandKnowsTheBuiltin(t *testing.T) {
	// OPA's commands print to os.Stdout itself.
	r, w, err := os.Pipe()
	require.NoError(t, err)
	read := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		read <- b
	}()
	stdout := os.Stdout
	os.Stdout = w
	code, _, _ := run(t, "opa", "capabilities", "--current")
	os.Stdout = stdout
	require.NoError(t, w.Close())
	out := <-read
	require.Equal(t, 0, code)
	require.Contains(t, string(out), `"name": "mandate.placement"`)
}

// TestEvalKinds decides each kind of issue 11 from its upstream project's
// example (workload/testdata): decided (exit 0 or 1, never 2), with the
// gang's GPUs as the quota request.
func TestEvalKinds(t *testing.T) {
	for _, tc := range []struct {
		file, kind, requested string
	}{
		{"jobset-gpu-exclusive.yaml", "JobSet", "+ 64 requested"},
		{"trainjob-torch-ddp.yaml", "TrainJob", "+ 10 requested"},
		{"lws-vllm-gpu.yaml", "LeaderWorkerSet", "+ 32 requested"},
		{"mpijob-tensorflow-benchmarks.yaml", "MPIJob", "+ 2 requested"},
		{"rayjob-pytorch-text-classifier.yaml", "RayJob", "+ 1 requested"},
		{"raycluster-complete.yaml", "RayCluster", "RayCluster product/raycluster-complete"},
		{"deployment-inference.yaml", "Deployment", "+ 4 requested"},
		{"statefulset-inference.yaml", "StatefulSet", "+ 6 requested"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("../../../workload/testdata", tc.file))
			require.NoError(t, err)
			// The TrainJob example names its proposal's namespace.
			code, out, msg := run(t, "eval", "-f", manifest(t, strings.ReplaceAll(string(data), "namespace: tenant-alpha", "namespace: product")),
				"--cluster", exampleCluster, "-n", "product")
			require.Contains(t, []int{exitAdmitted, exitDenied}, code, msg+out)
			require.Contains(t, out, tc.kind+" product/")
			require.Contains(t, out, tc.requested)
			require.NotContains(t, out, "skipped")
		})
	}
}

// TestEvalMixedDirectory: documents of kinds Mandate does not govern are
// skipped with a line saying so; the rest are decided as usual.
func TestEvalMixedDirectory(t *testing.T) {
	dir := t.TempDir()
	queue := "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: research}\nspec: {weight: 1}\n"
	job := func(gpus int) string {
		return fmt.Sprintf("apiVersion: batch/v1\nkind: Job\nmetadata: {name: train, namespace: product}\nspec:\n  template:\n    spec:\n"+
			"      restartPolicy: Never\n      containers:\n      - {name: c, image: x, resources: {limits: {nvidia.com/gpu: %d}}}\n", gpus)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "00-queue.yaml"), []byte(queue), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "01-job.yaml"), []byte(job(1)), 0o600))
	code, out, msg := run(t, "eval", "-f", dir, "--cluster", exampleCluster)
	require.Equal(t, exitAdmitted, code, msg+out)
	require.Contains(t, out, "00-queue.yaml: scheduling.volcano.sh/v1beta1 Queue research: skipped: not a governed kind")
	require.Contains(t, out, "Job product/train")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "01-job.yaml"), []byte(job(1000)), 0o600))
	code, out, msg = run(t, "eval", "-f", dir, "--cluster", exampleCluster)
	require.Equal(t, exitDenied, code, msg+out)
	require.Contains(t, out, "skipped: not a governed kind")
	require.Contains(t, out, "QUOTA_EXCEEDS_CEILING")

	// Machine-readable output stays parseable: the skip goes to stderr.
	code, out, msg = run(t, "eval", "-f", dir, "--cluster", exampleCluster, "-o", "json")
	require.Equal(t, exitDenied, code, msg+out)
}

// TestEvalDeploymentPreviewsItsPods: a Deployment is followed by what its
// pods get: its directives, counted with it.
func TestEvalDeploymentPreviewsItsPods(t *testing.T) {
	code, out, msg := run(t, "eval", "-f", "../../../workload/testdata/deployment-inference.yaml", "--cluster", exampleCluster, "-n", "product")
	require.Equal(t, exitAdmitted, code, msg+out)
	require.Contains(t, out, "Pod product/llm-serve-*")
	require.Contains(t, out, "each of the 4 pods of Deployment llm-serve is admitted with its directives and counted with it, not again")
	require.Contains(t, out, "add /metadata/labels/kai.scheduler~1queue product")
}

// TestEvalTrainJobRuntimeAssumptionsWarn: what a TrainJob leaves to its
// runtime (node count, resources) is not read at admission; the decision
// says what was assumed.
func TestEvalTrainJobRuntimeAssumptionsWarn(t *testing.T) {
	tj := "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: mnist, namespace: product}\nspec:\n  runtimeRef: {name: torch-distributed}\n"
	code, out, msg := run(t, "eval", "-f", manifest(t, tj), "--cluster", exampleCluster)
	require.Equal(t, exitAdmitted, code, msg+out)
	require.Contains(t, out, `spec.trainer.numNodes is unset: counted as 1 node; the nodes runtime "torch-distributed" adds`)
	require.Contains(t, out, "spec.trainer.resourcesPerNode is unset: no GPUs are counted with the TrainJob")
}
