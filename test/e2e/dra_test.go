package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
)

const (
	draObjects = `
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: product}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared-pair, namespace: product}
spec:
  devices:
    requests:
    - name: gpus
      exactly: {deviceClassName: gpu.nvidia.com, count: 2}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: fast-nic, namespace: product}
spec:
  spec:
    devices:
      requests:
      - name: nic
        exactly: {deviceClassName: nic.example.com}
`
	draGang = `
apiVersion: batch/v1
kind: Job
metadata: {name: dra-gang, namespace: product}
spec:
  parallelism: 8
  completions: 8
  template:
    spec:
      restartPolicy: Never
      resourceClaims:
      - {name: gpu, resourceClaimTemplateName: one-gpu}
      containers:
      - name: main
        image: ubuntu
        resources: {claims: [{name: gpu}]}
`
	draShared = `
apiVersion: batch/v1
kind: Job
metadata: {name: dra-shared, namespace: product}
spec:
  parallelism: 4
  completions: 4
  template:
    spec:
      restartPolicy: Never
      resourceClaims:
      - {name: pair, resourceClaimName: shared-pair}
      - {name: nic, resourceClaimTemplateName: fast-nic}
      containers:
      - name: main
        image: ubuntu
        resources: {claims: [{name: pair}, {name: nic}]}
`
)

// TestDRAClaimsAreGPUDemand: on a real API server serving resource.k8s.io/v1,
// a gang of 8 pods with a one-GPU claim template each counts 8 GPUs and is
// placed; a shared claim counts once however many pods use it; a claim for
// a DeviceClass the model does not map is named in a warning.
func TestDRAClaimsAreGPUDemand(t *testing.T) {
	s := start(t)
	s.populate(t)
	ctx := context.Background()
	for _, doc := range strings.Split(draObjects, "\n---\n") {
		s.create(t, doc)
	}
	decide := func(t *testing.T, manifest string) review.Result {
		t.Helper()
		res, err := s.srv.Service.Review(ctx, object(t, manifest), evaluator.Request{Operation: "CREATE", User: "admin", DryRun: true})
		if err != nil {
			t.Fatalf("Review: %v", err)
		}
		return res
	}

	t.Run("8 pods × a 1-GPU claim template count 8 GPUs and are placed", func(t *testing.T) {
		res := decide(t, draGang)
		w := res.Workload
		if w.TotalGPUs != 8 || w.GPUsPerPod != 1 || w.GPUResource != "nvidia.com/gpu" {
			t.Fatalf("workload counts %d × %d %s, want 8 GPUs of nvidia.com/gpu, 1 per pod", w.TotalGPUs, w.GPUsPerPod, w.GPUResource)
		}
		if !res.Decision.Allowed || res.Decision.Directives.RequiredLevel == "" {
			t.Fatalf("not admitted with a placement: allowed %v, violations %v, required level %q",
				res.Decision.Allowed, res.Decision.Violations, res.Decision.Directives.RequiredLevel)
		}
		s.create(t, draGang) // and the webhook admits it
	})

	t.Run("a shared claim counts once; an unmapped DeviceClass is named", func(t *testing.T) {
		res := decide(t, draShared)
		if res.Workload.TotalGPUs != 2 {
			t.Errorf("4 pods sharing a 2-GPU claim count %d GPUs, want 2", res.Workload.TotalGPUs)
		}
		found := false
		for _, w := range res.Decision.Warnings {
			found = found || (strings.Contains(w, review.CodeDRAUnmapped) && strings.Contains(w, "nic.example.com") && strings.Contains(w, "fast-nic"))
		}
		if !found {
			t.Errorf("warnings %q do not name the unmapped DeviceClass nic.example.com", res.Decision.Warnings)
		}
	})
}
