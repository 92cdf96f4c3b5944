package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// productJob is an inference Job of tenant product asking for 8 GPUs of a
// GPU product in each of pods pods.
func productJob(name, product string, pods int) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: %[1]s, namespace: product}
spec:
  parallelism: %[3]d
  completions: %[3]d
  template:
    spec:
      priorityClassName: inference
      restartPolicy: Never
      nodeSelector: {nvidia.com/gpu.product: %[2]s}
      containers:
        - name: serve
          image: registry.example/serve:1
          resources: {limits: {nvidia.com/gpu: "8"}}
`, name, product, pods)
}

type productView struct {
	Workload     struct{ Name string }
	Allowed      bool
	Warnings     []string
	Directives   struct{ Preemptible bool }
	Explanations []struct{ Dimension, Verdict, Limit, Current string }
}

func (v productView) quota(t *testing.T) (limit, current string) {
	t.Helper()
	for _, e := range v.Explanations {
		if e.Dimension == "quota" {
			return e.Limit, e.Current
		}
	}
	t.Fatalf("%s has no quota explanation", v.Workload.Name)
	return "", ""
}

func evalProductJobs(t *testing.T, jobs ...string) []productView {
	t.Helper()
	code, out, errText := run(t, "eval", "-f", manifest(t, strings.Join(jobs, "---\n")), "--cluster", exampleCluster, "-o", "json")
	require.Equal(t, exitAdmitted, code, errText)
	var views []productView
	if len(jobs) == 1 { // one workload is rendered as an object, not a list
		views = make([]productView, 1)
		require.NoError(t, json.Unmarshal([]byte(out), &views[0]))
	} else {
		require.NoError(t, json.Unmarshal([]byte(out), &views))
	}
	require.Len(t, views, len(jobs))
	return views
}

// In the example model, tenant product guarantees 128 nvidia.com/gpu: 120
// of them H100 and 8 B200. The example cluster runs 112 of its inference
// GPUs on H100 nodes (counted against H100 by their nodes' product).
func TestEvalCountsEachGPUProductAgainstItsOwnQuota(t *testing.T) {
	const h100, b200 = "NVIDIA-H100-80GB-HBM3", "NVIDIA-B200"
	// Decided in turn, each reserving what it was admitted for.
	views := evalProductJobs(t,
		productJob("serve-h100", h100, 1),
		productJob("tune-b200", b200, 1),
		productJob("serve-h100-more", h100, 1),
	)
	h, b, more := views[0], views[1], views[2]

	require.True(t, h.Allowed)
	require.False(t, h.Directives.Preemptible, "8 H100 fit H100's guarantee: %v", h.Warnings)
	limit, current := h.quota(t)
	require.Equal(t, "tenant product: guaranteed 120, ceiling 144 NVIDIA-H100-80GB-HBM3 nvidia.com/gpu", limit)
	require.Equal(t, "112 in use (112 non-preemptible) + 8 requested; by product: NVIDIA-H100-80GB-HBM3 112 (112 non-preemptible)", current)

	require.True(t, b.Allowed)
	require.False(t, b.Directives.Preemptible, "B200 has its own guarantee, untouched by H100's being full: %v", b.Warnings)
	limit, current = b.quota(t)
	require.Equal(t, "tenant product: guaranteed 8, ceiling 32 NVIDIA-B200 nvidia.com/gpu", limit)
	require.True(t, strings.HasPrefix(current, "0 in use (0 non-preemptible) + 8 requested"), current)

	require.True(t, more.Allowed)
	require.True(t, more.Directives.Preemptible, "beyond H100's guarantee")
	require.Len(t, more.Warnings, 1)
	require.Contains(t, more.Warnings[0], "tenant product has 120 of 120 guaranteed NVIDIA-H100-80GB-HBM3 nvidia.com/gpu in non-preemptible use and this workload needs 8 more")
	_, current = more.quota(t)
	require.Contains(t, current, "NVIDIA-B200 8 (8 non-preemptible), NVIDIA-H100-80GB-HBM3 120 (120 non-preemptible)")
}

// 16 H100 fit what is left of the resource's guarantee (112 + 16 = 128) but
// not of H100's (120): the product's quota alone turns it preemptible,
// while 16 GPUs of no product in particular stay non-preemptible.
func TestEvalProductGuaranteeIsItsOwn(t *testing.T) {
	views := evalProductJobs(t, productJob("serve-h100-16", "NVIDIA-H100-80GB-HBM3", 2))
	require.True(t, views[0].Directives.Preemptible)
	require.Contains(t, views[0].Warnings[0], "112 of 120 guaranteed NVIDIA-H100-80GB-HBM3 nvidia.com/gpu")

	anyProduct := strings.Replace(productJob("serve-any-16", "x", 2), "      nodeSelector: {nvidia.com/gpu.product: x}\n", "", 1)
	views = evalProductJobs(t, anyProduct)
	require.False(t, views[0].Directives.Preemptible, "%v", views[0].Warnings)
	limit, _ := views[0].quota(t)
	require.Equal(t, "tenant product: guaranteed 128, ceiling 160 nvidia.com/gpu", limit)
}
