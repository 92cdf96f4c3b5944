package envtest_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/test/envtest"
)

// TestStartGarbageCollector proves owner references are acted on: deleting
// an owner deletes its dependent, as kube-controller-manager does in a real
// cluster.
func TestStartGarbageCollector(t *testing.T) {
	env := envtest.Start(t)
	envtest.StartGarbageCollector(t, env)
	ctx := context.Background()

	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "default"}}
	if err := env.Client.Create(ctx, owner); err != nil {
		t.Fatalf("Create(owner) error = %v", err)
	}
	dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "dependent", Namespace: "default",
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}},
	}}
	if err := env.Client.Create(ctx, dependent); err != nil {
		t.Fatalf("Create(dependent) error = %v", err)
	}
	if err := env.Client.Delete(ctx, owner, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatalf("Delete(owner) error = %v", err)
	}
	deadline := time.Now().Add(envtest.Timeout(30 * time.Second))
	for {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(dependent), &corev1.ConfigMap{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("dependent not garbage-collected within 30s (last Get error: %v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
