package scheduler

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestHoldForKueue: kinds with a suspend field are suspended at their own
// path; a kind without one (a Deployment) is left as it was.
func TestHoldForKueue(t *testing.T) {
	for _, tc := range []struct {
		apiVersion, kind string
		path             []string
	}{
		{"batch/v1", "Job", []string{"spec", "suspend"}},
		{"jobset.x-k8s.io/v1alpha2", "JobSet", []string{"spec", "suspend"}},
		{"kubeflow.org/v2beta1", "MPIJob", []string{"spec", "runPolicy", "suspend"}},
		{"kubeflow.org/v1", "PyTorchJob", []string{"spec", "runPolicy", "suspend"}},
		{"ray.io/v1", "RayJob", []string{"spec", "suspend"}},
		{"trainer.kubeflow.org/v1alpha1", "TrainJob", []string{"spec", "suspend"}},
	} {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": tc.apiVersion, "kind": tc.kind,
			"metadata": map[string]any{"name": "x"}, "spec": map[string]any{}}}
		if tc.path[1] == "runPolicy" {
			unstructured.SetNestedField(obj.Object, false, tc.path...)
		}
		held, err := HoldForKueue(obj)
		if err != nil || !held {
			t.Fatalf("%s: held %v, %v; want true", tc.kind, held, err)
		}
		if got, _, _ := unstructured.NestedBool(obj.Object, tc.path...); !got {
			t.Errorf("%s: %v is not true", tc.kind, tc.path)
		}
	}
	dep := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "x"}, "spec": map[string]any{"replicas": int64(1)}}}
	if held, err := HoldForKueue(dep); err != nil || held {
		t.Errorf("Deployment: held %v, %v; want false", held, err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(dep.Object, "spec", "suspend"); found {
		t.Error("a Deployment got a suspend field")
	}
}
