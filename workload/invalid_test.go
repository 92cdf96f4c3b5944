package workload

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pod returns a Pod manifest whose single container has the given limits (a
// YAML flow map) and whose metadata has the given extra flow entries.
func pod(meta, limits string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: p%s}
spec:
  containers:
  - name: c
    image: i
    resources: {limits: %s}
`, meta, limits)
}

// volcanoJob returns a Volcano Job with one task per replicas entry, each
// asking for limits.
func volcanoJob(spec string, limits string, replicas ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: v}\nspec:\n  " + spec + "\n  tasks:\n")
	for i, r := range replicas {
		fmt.Fprintf(&b, "  - name: t%d\n    replicas: %s\n    template: {spec: {containers: [{name: c, image: i, resources: {limits: %s}}]}}\n", i, r, limits)
	}
	return b.String()
}

func TestNormalizeInvalid(t *testing.T) {
	huge := strings.Repeat("  - {name: t, replicas: 1, template: {spec: {containers: [{name: c, image: i}]}}}\n", MaxDecodeBytes/70)
	cases := []struct {
		name     string
		manifest string
		wantErr  error
		wantMsg  string
	}{
		{"malformed YAML", "kind: Pod\n  apiVersion: v1\n", ErrInvalid, "malformed YAML"},
		{"unknown kind", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d}\n", ErrUnsupportedKind, "supported kinds are"},
		{"unknown version of a known kind", "apiVersion: kubeflow.org/v2\nkind: PyTorchJob\nmetadata: {name: d}\n", ErrUnsupportedKind, "kubeflow.org/v2 PyTorchJob"},
		{"bad apiVersion", "apiVersion: a/b/c\nkind: Pod\nmetadata: {name: d}\n", ErrInvalid, `apiVersion is "a/b/c"`},
		{"no metadata", "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c}]}\n", ErrInvalid, "metadata is required"},
		{"metadata not an object", "apiVersion: v1\nkind: Pod\nmetadata: [a]\n", ErrInvalid, "metadata is an array"},
		{"no name", "apiVersion: v1\nkind: Pod\nmetadata: {namespace: ns}\nspec: {containers: [{name: c}]}\n", ErrInvalid, "metadata.name is required"},
		{"label of the wrong type", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {a: [1]}}\nspec: {containers: [{name: c}]}\n", ErrInvalid, "malformed"},
		{"no containers", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n", ErrInvalid, "spec.containers is required"},
		{"job without template containers", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {}\n", ErrInvalid, "spec.template.spec.containers is required"},
		{"pytorchjob without replica specs", "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: p}\nspec: {}\n", ErrInvalid, "spec.pytorchReplicaSpecs is required"},
		{"pytorchjob null replica spec", "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: p}\nspec: {pytorchReplicaSpecs: {Worker: null}}\n", ErrInvalid, "spec.pytorchReplicaSpecs[Worker] is required"},
		{"volcano job without tasks", "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: v}\nspec: {tasks: []}\n", ErrInvalid, "spec.tasks is required"},
		{"negative replicas", volcanoJob("", "{}", "-1"), ErrInvalid, "spec.tasks[0].replicas is -1"},
		{"replicas not a number", volcanoJob("", "{}", `"three"`), ErrInvalid, `spec.tasks[0].replicas is "three"`},
		{"fractional replicas", volcanoJob("", "{}", "1.5"), ErrInvalid, "spec.tasks[0].replicas is 1.5"},
		{"replicas beyond int32", volcanoJob("", "{}", "4294967297"), ErrInvalid, "must be a whole number from 0 to 100000"},
		{"too many pods in total", volcanoJob("", "{}", "60000", "60000"), ErrInvalid, "the total replica count is 120000"},
		{"no pods at all", volcanoJob("", "{}", "0"), ErrInvalid, "the total replica count is 0"},
		{"job parallelism absurd", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {parallelism: 1000000, template: {spec: {containers: [{name: c}]}}}\n", ErrInvalid, "spec.parallelism is 1000000"},
		{"job parallelism zero", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {parallelism: 0, template: {spec: {containers: [{name: c}]}}}\n", ErrInvalid, "a workload runs at least one pod"},
		{"too many GPUs per pod", pod("", "{nvidia.com/gpu: 1025}"), ErrInvalid, "must be a whole number of devices from 0 to 1024"},
		{"too many GPUs across containers", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: a, resources: {limits: {nvidia.com/gpu: 1000}}}\n  - {name: b, resources: {limits: {nvidia.com/gpu: 1000}}}\n", ErrInvalid, "a pod may use at most 1024"},
		{"negative GPUs", pod("", "{nvidia.com/gpu: -1}"), ErrInvalid, `spec.containers[0].resources.limits[nvidia.com/gpu] is "-1"`},
		{"non-integer GPUs", pod("", "{nvidia.com/gpu: 500m}"), ErrInvalid, `limits[nvidia.com/gpu] is "500m"`},
		{"huge GPU quantity", pod("", "{nvidia.com/gpu: 1e100}"), ErrInvalid, "must be a whole number of devices"},
		{"malformed quantity", pod("", "{nvidia.com/gpu: lots}"), ErrInvalid, "malformed Pod"},
		{"mixed GPU resources in a pod", pod("", "{nvidia.com/gpu: 1, nvidia.com/mig-1g.10gb: 1}"), ErrInvalid, "asks for nvidia.com/gpu and nvidia.com/mig-1g.10gb"},
		{"mixed GPU resources across roles", `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p}
spec:
  pytorchReplicaSpecs:
    Master: {template: {spec: {containers: [{name: c, resources: {limits: {amd.com/gpu: 1}}}]}}}
    Worker: {template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}}}
`, ErrInvalid, "a gang may use only one GPU resource"},
		{"mixed products across roles", `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p}
spec:
  pytorchReplicaSpecs:
    Master: {template: {spec: {nodeSelector: {nvidia.com/gpu.product: A}, containers: [{name: c}]}}}
    Worker: {template: {spec: {nodeSelector: {nvidia.com/gpu.product: B}, containers: [{name: c}]}}}
`, ErrInvalid, "different GPU products A and B"},
		{"unknown class", pod(", labels: {mandate.dev/class: research}", "{}"), ErrInvalid, `metadata.labels[mandate.dev/class] is "research": must be one of training`},
		{"min-available zero", pod(", annotations: {mandate.dev/min-available: '0'}", "{}"), ErrInvalid, "must be a whole number from 1 to the gang size 1"},
		{"min-available above gang", volcanoJob("", "{}", "2") + "metadata: {name: v, annotations: {mandate.dev/min-available: '3'}}\n", ErrInvalid, `min-available] is "3"`},
		{"min-available not a number", pod(", annotations: {mandate.dev/min-available: two}", "{}"), ErrInvalid, `is "two"`},
		{"volcano minAvailable above total", volcanoJob("minAvailable: 5", "{}", "2", "2"), ErrInvalid, "spec.minAvailable is 5: must be a whole number from 0 to the 4 replicas of all tasks"},
		{"pytorch minReplicas above gang", "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: p}\nspec: {runPolicy: {schedulingPolicy: {minAvailable: 3}}, pytorchReplicaSpecs: {Worker: {replicas: 2, template: {spec: {containers: [{name: c}]}}}}}\n", ErrInvalid, "spec.runPolicy.schedulingPolicy.minAvailable is 3: must be a whole number from 1 to the 2 replicas"},
		{"pytorch minReplicas zero", "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: p}\nspec: {elasticPolicy: {minReplicas: 0}, pytorchReplicaSpecs: {Worker: {template: {spec: {containers: [{name: c}]}}}}}\n", ErrInvalid, "spec.elasticPolicy.minReplicas is 0"},
		{"fraction of one or more", pod(", annotations: {gpu-fraction: '1.5'}", "{}"), ErrInvalid, `metadata.annotations[gpu-fraction] is "1.5": must be a number between 0 and 1`},
		{"fraction NaN", pod(", annotations: {gpu-fraction: NaN}", "{}"), ErrInvalid, `is "NaN"`},
		{"fraction and whole GPUs", pod(", annotations: {gpu-fraction: '0.5'}", "{nvidia.com/gpu: 1}"), ErrInvalid, "and for a shared GPU"},
		{"fraction and memory", pod(", annotations: {gpu-fraction: '0.5', gpu-memory: '1024'}", "{}"), ErrInvalid, "are exclusive"},
		{"fraction devices alone", pod(", annotations: {gpu-fraction-num-devices: '2'}", "{}"), ErrInvalid, "needs gpu-fraction or gpu-memory"},
		{"different fractions across roles", `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p}
spec:
  pytorchReplicaSpecs:
    Master: {template: {metadata: {annotations: {gpu-fraction: "0.5"}}, spec: {containers: [{name: c}]}}}
    Worker: {template: {metadata: {annotations: {gpu-fraction: "0.25"}}, spec: {containers: [{name: c}]}}}
`, ErrInvalid, "share GPUs differently (gpu-fraction=0.5 vs gpu-fraction=0.25)"},
		{"huge object", "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: v}\nspec:\n  tasks:\n" + huge, ErrInvalid, "more than the 8388608 allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := normalizeString(tc.manifest)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.wantErr)
			assert.Contains(t, err.Error(), tc.wantMsg)
		})
	}
}

func TestNormalizeSharing(t *testing.T) {
	cases := []struct {
		name        string
		annotations string
		wantPerPod  int
		wantFrac    float64
		wantMem     int64
		wantMilli   int64 // the fraction counted against quota
		wantTotal   int   // TotalMilliGPUs rounded up
	}{
		{"fraction", "{gpu-fraction: '0.25'}", 1, 0.25, 0, 250, 1},
		{"fraction over two devices", "{gpu-fraction: '0.5', gpu-fraction-num-devices: '2'}", 2, 0.5, 0, 1000, 1},
		{"memory", "{gpu-memory: '20480'}", 1, 0, 20480, 1000, 1},
		{"empty fraction is none", "{gpu-fraction: ''}", 0, 0, 0, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := mustNormalize(t, pod(", annotations: "+tc.annotations, "{}"))
			assert.Equal(t, tc.wantPerPod, w.GPUsPerPod, "gpusPerPod")
			assert.Equal(t, tc.wantTotal, w.TotalGPUs, "totalGPUs")
			assert.Equal(t, tc.wantMilli, w.TotalMilliGPUs, "totalMilliGPUs")
			assert.Equal(t, tc.wantFrac, w.GPUFraction, "fraction")
			assert.Equal(t, tc.wantMem, w.GPUMemoryMiB, "memory")
		})
	}
}

// TestFractionsCountAsFractions: 16 pods at gpu-fraction 0.25 count 4
// GPUs against quota, not 16; a thousandth is the resolution, rounded up.
func TestFractionsCountAsFractions(t *testing.T) {
	w := mustNormalize(t, job("parallelism: 16\n  completions: 16", "annotations: {}",
		"\n    metadata: {annotations: {gpu-fraction: '0.25'}}"))
	assert.Equal(t, 16, w.Pods)
	assert.Equal(t, int64(4000), w.TotalMilliGPUs)
	assert.Equal(t, 4, w.TotalGPUs)
	assert.Equal(t, int64(334), FractionMilli(0.3334))
	assert.Equal(t, int64(100), FractionMilli(0.1))
}

func TestNormalizeSidecars(t *testing.T) {
	// Sidecars (restartable init containers) run beside the app containers
	// and beside later init containers; a plain init container runs alone.
	manifest := `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  initContainers:
  - {name: first, resources: {limits: {nvidia.com/gpu: 3}}}
  - {name: sidecar, restartPolicy: Always, resources: {limits: {nvidia.com/gpu: 1}}}
  - {name: late, resources: {limits: {nvidia.com/gpu: 4}}}
  containers:
  - {name: app, resources: {limits: {nvidia.com/gpu: 2}}}
`
	w := mustNormalize(t, manifest)
	assert.Equal(t, 5, w.GPUsPerPod) // late (4) + sidecar (1) > app (2) + sidecar (1) > first (3)
}
