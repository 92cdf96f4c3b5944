package envtest_test

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/test/envtest"
)

var podGroupGVK = schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"}

func podGroup(name string, minMember any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec": map[string]any{
			"minMember": minMember,
			"queue":     "default",
		},
	}}
	u.SetGroupVersionKind(podGroupGVK)
	return u
}

// TestStart proves the API server is real and runs the upstream CRDs: a valid
// Volcano PodGroup is stored, and one the CRD's OpenAPI schema rejects is not.
func TestStart(t *testing.T) {
	env := envtest.Start(t, envtest.WithPyTorchJobCRD(), envtest.WithCertManagerCRDs())
	ctx := context.Background()

	t.Run("valid PodGroup is stored", func(t *testing.T) {
		if err := env.Client.Create(ctx, podGroup("gang", int64(4))); err != nil {
			t.Fatalf("Create() error = %v", err)
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(podGroupGVK)
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "gang"}, got); err != nil {
			t.Fatalf("Get() error = %v", err)
		}
		minMember, found, err := unstructured.NestedInt64(got.Object, "spec", "minMember")
		if err != nil || !found || minMember != 4 {
			t.Errorf("stored spec.minMember = %v (found %v, err %v), want 4", minMember, found, err)
		}
	})

	t.Run("schema rejects an invalid PodGroup", func(t *testing.T) {
		err := env.Client.Create(ctx, podGroup("bad", "four"))
		if !apierrors.IsInvalid(err) {
			t.Fatalf("Create() error = %v, want an Invalid error from the CRD schema", err)
		}
	})

	t.Run("optional CRDs are served", func(t *testing.T) {
		for _, gvk := range []schema.GroupVersionKind{
			{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJobList"},
			{Group: "cert-manager.io", Version: "v1", Kind: "CertificateList"},
			{Group: "scheduling.run.ai", Version: "v2alpha2", Kind: "PodGroupList"},
		} {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk)
			if err := env.Client.List(ctx, list); err != nil {
				t.Errorf("List(%s) error = %v", gvk, err)
			}
		}
	})
}
