package e2e

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
)

const kueueJob = `
apiVersion: batch/v1
kind: Job
metadata:
  name: finetune
  namespace: product
spec:
  suspend: true
  parallelism: 2
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: ubuntu
        resources: {limits: {nvidia.com/gpu: 8}}
`

// TestKueueTenant: with Kueue's CRDs installed and tenant product on
// Kueue, a suspended Job gets the LocalQueue, WorkloadPriorityClass and
// TAS keys, whose names Kueue's own objects (made with the same names
// under the real CRD schemas) accept; its GPUs are not counted in
// Mandate's usage: Kueue holds its quota.
func TestKueueTenant(t *testing.T) {
	dir := candidateDir(t, func(model map[string]any) {
		model["tenants"].(map[string]any)["product"].(map[string]any)["scheduler"] = "kueue"
	})
	s := startWith(t, startOptions{env: []envtest.Option{envtest.WithKueueCRDs()}, config: func(c *config.Serve) {
		c.Bundle.Source = fixtures.BundleFile(t, dir, "kueue-r1")
	}})
	s.populate(t)
	ctx := context.Background()
	before := s.srv.State.Usage("product")["product"]["nvidia.com/gpu"]

	job := s.create(t, kueueJob)
	queue := job.GetLabels()[scheduler.LabelKueueQueueName]
	class := job.GetLabels()[scheduler.LabelKueuePriorityClass]
	if queue != "product" || class == "" {
		t.Fatalf("Job labels %v: want queue-name product and a priority-class", job.GetLabels())
	}
	tas, _, _ := unstructured.NestedString(job.Object, "spec", "template", "metadata", "annotations", scheduler.AnnotationKueueRequiredTopology)
	if tas == "" {
		t.Errorf("pod template lacks %s", scheduler.AnnotationKueueRequiredTopology)
	}
	if suspend, _, _ := unstructured.NestedBool(job.Object, "spec", "suspend"); !suspend {
		t.Error("Mandate unsuspended the Job: that is Kueue's to do")
	}
	if got := s.srv.State.Usage("product")["product"]["nvidia.com/gpu"]; got != before {
		t.Errorf("product's usage went from %+v to %+v: a suspended Kueue Job is Kueue's quota", before, got)
	}

	// The names rendered are names Kueue's objects take, under its CRDs.
	for _, manifest := range []string{
		`{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "gpu"}}`,
		`{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": "fabric"},
		  "spec": {"levels": [{"nodeLabel": "` + tas + `"}]}}`,
		`{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "product"},
		  "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"],
		    "flavors": [{"name": "gpu", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 16}]}]}]}}`,
		`{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "` + queue + `", "namespace": "product"},
		  "spec": {"clusterQueue": "product"}}`,
		`{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": "` + class + `"}, "value": 50}`,
	} {
		obj := object(t, manifest)
		if err := s.env.Client.Create(ctx, obj); err != nil {
			t.Errorf("Kueue's CRD refused %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}
