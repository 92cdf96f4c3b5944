package workload

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden is what testdata/<case>.golden.json holds: the Workload as Rego sees
// it, plus the template pointers the adapters use (not part of its JSON).
type golden struct {
	Workload  Workload `json:"workload"`
	Templates []string `json:"templates"`
}

func TestNormalizeGolden(t *testing.T) {
	cases := []struct {
		file string
		// wantSummary pins the numbers that matter, so a wrong golden file
		// written with -update cannot slip through.
		wantPods, wantMin, wantPerPod, wantTotal int
		wantResource                             string
	}{
		{"pytorchjob-h100-training.yaml", 4, 0, 8, 32, "nvidia.com/gpu"},
		{"pod-mig-inference.yaml", 1, 0, 1, 1, "nvidia.com/mig-1g.10gb"},
		{"volcanojob-minavailable.yaml", 6, 4, 2, 8, "nvidia.com/gpu"},
		{"job-parallelism-affinity.yaml", 4, 2, 2, 8, "nvidia.com/gpu"},
		{"pod-fraction.yaml", 1, 0, 1, 1, "nvidia.com/gpu"},
		// The kinds of issue 11, from their upstream projects' examples.
		{"jobset-startup-policy.yaml", 3, 0, 0, 0, ""},
		{"jobset-gpu-exclusive.yaml", 9, 0, 8, 64, "nvidia.com/gpu"},
		{"trainjob-torch-ddp.yaml", 5, 0, 2, 10, "nvidia.com/gpu"},
		{"lws-vllm-gpu.yaml", 4, 2, 8, 32, "nvidia.com/gpu"},
		{"mpijob-tensorflow-benchmarks.yaml", 3, 0, 1, 2, "nvidia.com/gpu"},
		{"rayjob-pytorch-text-classifier.yaml", 1, 0, 1, 1, "nvidia.com/gpu"},
		{"raycluster-complete.yaml", 2, 0, 0, 0, ""},
		{"deployment-inference.yaml", 4, 1, 1, 4, "nvidia.com/gpu"},
		{"statefulset-inference.yaml", 3, 1, 2, 6, "nvidia.com/gpu"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			require.NoError(t, err)
			objs, err := Decode(data)
			require.NoError(t, err)
			require.Len(t, objs, 1)
			w, err := Normalize(objs[0])
			require.NoError(t, err)

			assert.Equal(t, tc.wantPods, w.Pods, "pods")
			assert.Equal(t, tc.wantMin, w.MinPods, "minPods")
			assert.Equal(t, tc.wantPerPod, w.GPUsPerPod, "gpusPerPod")
			assert.Equal(t, tc.wantTotal, w.TotalGPUs, "totalGPUs")
			assert.Equal(t, tc.wantResource, w.GPUResource, "gpuResource")

			got := golden{Workload: w, Templates: w.Templates}
			got.Workload.Templates = nil
			path := filepath.Join("testdata", strings.TrimSuffix(tc.file, ".yaml")+".golden.json")
			if *update {
				out, err := json.MarshalIndent(got, "", "  ")
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(path, append(out, '\n'), 0o644))
			}
			raw, err := os.ReadFile(path)
			require.NoError(t, err, "run go test -update to create it")
			var want golden
			require.NoError(t, json.Unmarshal(raw, &want))
			assert.Equal(t, want, got, "(-want +got)")
		})
	}
}

func TestNormalizeSemantics(t *testing.T) {
	cases := []struct {
		name        string
		manifest    string
		wantClass   Class
		wantPods    int
		wantMin     int
		wantRoles   []Role
		wantProduct string
		wantPrio    string
		wantSched   string
		wantTmpl    []string
	}{
		{
			name:      "job defaults to one pod",
			manifest:  job("", "", ""),
			wantClass: ClassBatch, wantPods: 1,
			wantRoles: []Role{{Name: "main", Replicas: 1}},
			wantTmpl:  []string{"/spec/template"},
		},
		{
			name:      "completions below parallelism cap the gang",
			manifest:  job("parallelism: 8\n  completions: 3", "", ""),
			wantClass: ClassBatch, wantPods: 3,
			wantRoles: []Role{{Name: "main", Replicas: 3}},
			wantTmpl:  []string{"/spec/template"},
		},
		{
			name:      "class label overrides the kind",
			manifest:  job("", "labels: {mandate.dev/class: training}", ""),
			wantClass: ClassTraining, wantPods: 1,
			wantRoles: []Role{{Name: "main", Replicas: 1}},
			wantTmpl:  []string{"/spec/template"},
		},
		{
			name: "affinity terms that disagree pin no product",
			manifest: job("", "", `
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions: [{key: nvidia.com/gpu.product, operator: In, values: [A]}]
              - matchExpressions: [{key: nvidia.com/gpu.product, operator: In, values: [B]}]`),
			wantClass: ClassBatch, wantPods: 1,
			wantRoles: []Role{{Name: "main", Replicas: 1}},
			wantTmpl:  []string{"/spec/template"},
		},
		{
			name: "affinity with two allowed values pins no product",
			manifest: job("", "", `
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions: [{key: nvidia.com/gpu.product, operator: In, values: [A, B]}]`),
			wantClass: ClassBatch, wantPods: 1,
			wantRoles: []Role{{Name: "main", Replicas: 1}},
			wantTmpl:  []string{"/spec/template"},
		},
		{
			name: "node selector wins over affinity",
			manifest: job("", "", `
      nodeSelector: {nvidia.com/gpu.product: H200}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions: [{key: nvidia.com/gpu.product, operator: In, values: [B]}]`),
			wantClass: ClassBatch, wantPods: 1, wantProduct: "H200",
			wantRoles: []Role{{Name: "main", Replicas: 1}},
			wantTmpl:  []string{"/spec/template"},
		},
		{
			name: "pytorchjob replicas default to one, elastic minimum",
			manifest: `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p}
spec:
  elasticPolicy: {minReplicas: 2, maxReplicas: 4}
  pytorchReplicaSpecs:
    Worker:
      replicas: 3
      template: {spec: {schedulerName: volcano, containers: [{name: c, image: i, resources: {limits: {nvidia.com/gpu: 4}}}]}}
    Master:
      template: {spec: {priorityClassName: p1, containers: [{name: c, image: i}]}}`,
			wantClass: ClassTraining, wantPods: 4, wantMin: 2, wantPrio: "p1", wantSched: "volcano",
			wantRoles: []Role{{Name: "Master", Replicas: 1}, {Name: "Worker", Replicas: 3, GPUsPerPod: 4}},
			wantTmpl:  []string{"/spec/pytorchReplicaSpecs/Master/template", "/spec/pytorchReplicaSpecs/Worker/template"},
		},
		{
			name: "volcano job-level scheduler and priority win, unnamed task",
			manifest: `apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: v, annotations: {mandate.dev/min-available: "1"}}
spec:
  schedulerName: volcano
  priorityClassName: high
  tasks:
    - replicas: 2
      template: {spec: {schedulerName: other, priorityClassName: low, containers: [{name: c, image: i}]}}`,
			wantClass: ClassTraining, wantPods: 2, wantMin: 1, wantPrio: "high", wantSched: "volcano",
			wantRoles: []Role{{Name: "default0", Replicas: 2}},
			wantTmpl:  []string{"/spec/tasks/0/template"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := mustNormalize(t, tc.manifest)
			assert.Equal(t, tc.wantClass, w.Class, "class")
			assert.Equal(t, tc.wantPods, w.Pods, "pods")
			assert.Equal(t, tc.wantMin, w.MinPods, "minPods")
			assert.Equal(t, tc.wantRoles, w.Roles, "roles")
			assert.Equal(t, tc.wantProduct, w.GPUProduct, "product")
			assert.Equal(t, tc.wantPrio, w.PriorityClass, "priorityClass")
			assert.Equal(t, tc.wantSched, w.Scheduler, "scheduler")
			assert.Equal(t, tc.wantTmpl, w.Templates, "templates")
		})
	}
}

func TestNormalizeUnsupportedKind(t *testing.T) {
	_, err := Normalize(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": map[string]any{"name": "d"},
	}})
	require.ErrorIs(t, err, ErrUnsupportedKind)
	for _, kind := range []string{"v1 Pod", "batch/v1 Job", "kubeflow.org/v1 PyTorchJob", "batch.volcano.sh/v1alpha1 Job"} {
		assert.Contains(t, err.Error(), kind)
	}
}

func TestRegister(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	t.Cleanup(func() {
		registry.Lock()
		delete(registry.byGVK, gvk)
		registry.Unlock()
	})
	widget := func(n Normaliser) Kind { return Kind{GVK: gvk, Resource: "widgets", Label: "Widget", Normalise: n} }
	Register(widget(func(*unstructured.Unstructured) (Workload, error) {
		return Workload{Pods: 2, Class: ClassBatch}, nil
	}))
	w := mustNormalize(t, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, labels: {mandate.dev/class: inference}}")
	assert.Equal(t, Workload{
		Kind: "Widget", APIVersion: "example.com/v1", Name: "w", Class: ClassInference, Pods: 2,
		Roles: []Role{}, Labels: map[string]string{LabelClass: "inference"}, Annotations: map[string]string{},
	}, w)

	// A registered Normaliser is held to the contract too.
	Register(widget(func(*unstructured.Unstructured) (Workload, error) { return Workload{Pods: 0}, nil }))
	_, err := normalizeString("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}")
	assert.ErrorIs(t, err, ErrInvalid)
	assert.Panics(t, func() { Register(widget(nil)) })
	ok := widget(func(*unstructured.Unstructured) (Workload, error) { return Workload{Pods: 1}, nil })
	ok.Resource, ok.Label = "", ""
	assert.Panics(t, func() { Register(ok) }, "a kind without resource and label")
}

// job returns a batch/v1 Job manifest: spec and meta are lines under spec
// and metadata (indented by two), podSpec lines follow the template's
// containers (each starting with a newline and six spaces).
func job(spec, meta, podSpec string) string {
	return `apiVersion: batch/v1
kind: Job
metadata:
  name: j
  ` + meta + `
spec:
  ` + spec + `
  template:
    spec:
      containers: [{name: c, image: i}]` + podSpec + "\n"
}

func mustNormalize(t *testing.T, manifest string) Workload {
	t.Helper()
	w, err := normalizeString(manifest)
	require.NoError(t, err)
	return w
}

func normalizeString(manifest string) (Workload, error) {
	objs, err := Decode([]byte(manifest))
	if err != nil {
		return Workload{}, err
	}
	if len(objs) != 1 {
		return Workload{}, errors.New("want exactly one object")
	}
	return Normalize(objs[0])
}

// TestNormalizeScaledToZero: a Deployment scaled to zero is decided on one
// replica, not rejected: scaling to zero must stay possible.
func TestNormalizeScaledToZero(t *testing.T) {
	objs, err := Decode([]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 0\n  template:\n    spec:\n      containers:\n      - {name: c, image: x, resources: {limits: {nvidia.com/gpu: 2}}}\n"))
	require.NoError(t, err)
	w, err := Normalize(objs[0])
	require.NoError(t, err)
	assert.Equal(t, 1, w.Pods)
	assert.Equal(t, 2, w.TotalGPUs)
}
