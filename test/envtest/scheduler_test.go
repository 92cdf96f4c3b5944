package envtest_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// TestStartScheduler: kube-scheduler, run as system:kube-scheduler, binds
// a GPU pod to the one GPU node that can hold it, and
// RemoveTerminatingPods removes a pod left terminating, as a kubelet would.
func TestStartScheduler(t *testing.T) {
	env := envtest.Start(t)
	ctx := context.Background()
	for i, gpus := range []string{"0", "8"} {
		node := fixtures.GPUNode(i)
		for _, list := range []corev1.ResourceList{node.Status.Capacity, node.Status.Allocatable} {
			list["nvidia.com/gpu"], list[corev1.ResourcePods] = resource.MustParse(gpus), resource.MustParse("110")
		}
		if err := fixtures.CreateNode(ctx, env.Client, node); err != nil {
			t.Fatal(err)
		}
	}
	envtest.StartScheduler(t, env)

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gpu"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "cuda",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}}}}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	envtest.WaitFor(t, time.Minute, "kube-scheduler to bind the pod", func() bool {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod) == nil && pod.Spec.NodeName != ""
	})
	if want := fixtures.GPUNode(1).Name; pod.Spec.NodeName != want {
		t.Fatalf("pod bound to %s, want %s, the only node with 8 GPUs", pod.Spec.NodeName, want)
	}

	// Bound, and deleted with its grace period, the pod terminates and
	// stays: no kubelet confirms that its containers stopped.
	if err := env.Client.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil || pod.DeletionTimestamp == nil {
		t.Fatalf("pod not terminating: %v", err)
	}
	removed, err := envtest.RemoveTerminatingPods(ctx, env.Client, "default")
	if err != nil || len(removed) != 1 || removed[0] != pod.Name {
		t.Fatalf("RemoveTerminatingPods = %v, %v; want [%s]", removed, err, pod.Name)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); !apierrors.IsNotFound(err) {
		t.Fatalf("pod still there after RemoveTerminatingPods: %v", err)
	}
}
