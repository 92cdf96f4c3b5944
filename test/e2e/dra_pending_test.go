package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// TestPendingDRAClaimsHoldTheGuarantee is the red team's case through two
// replicas sharing the ledger: 2 build pods each claiming 8 GPUs through a
// ResourceClaimTemplate, in a cluster where no controller makes their
// ResourceClaims (envtest runs no kube-controller-manager), then 2 more
// after the reservations' window. Until its claims exist a pod counts its
// template's requests, so the first two keep platform's guarantee of 16
// filled past the window and the next two are decided preemptible or
// denied, never non-preemptible: no replica counts more than 16
// non-preemptible GPUs.
func TestPendingDRAClaimsHoldTheGuarantee(t *testing.T) {
	const guarantee, ceiling = 16, 32
	policies := fixtures.PolicyDir(t, func(model map[string]any) {
		quota := model["tenants"].(map[string]any)["platform"].(map[string]any)["quota"].(map[string]any)
		quota["nvidia.com/gpu"] = map[string]any{"guaranteed": guarantee, "ceiling": ceiling}
	})
	s := startWith(t, startOptions{replicas: 2, shared: true, config: func(c *config.Serve) {
		c.Quota.ConfirmationWindow = confirmationWindow
		c.Policies = policies
	}})
	s.populate(t)
	ctx := context.Background()
	c := s.env.Client
	tpl := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "eight"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "gpus", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", Count: 8}}}}}}}
	if err := c.Create(ctx, tpl); err != nil {
		t.Fatalf("create ResourceClaimTemplate: %v", err)
	}
	buildPod := func(name string) (*corev1.Pod, error) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "platform"},
			Spec: corev1.PodSpec{PriorityClassName: "build",
				ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To("eight")}},
				Containers: []corev1.Container{{Name: "build", Image: "registry.example/build:1",
					Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpus"}}}}}}}
		return pod, c.Create(ctx, pod)
	}
	nonPreemptible := func(u map[string]map[string]ledger.Usage) int { return u["platform"]["nvidia.com/gpu"].NonPreemptible }
	for _, name := range []string{"build-a", "build-b"} {
		pod, err := buildPod(name)
		if err != nil {
			t.Fatalf("create pod %s: %v", name, err)
		}
		if got := pod.Labels[ledger.LabelPreemptible]; got != "false" {
			t.Fatalf("pod %s, within the guarantee, has mandate.dev/preemptible=%q, want false", name, got)
		}
	}
	time.Sleep(confirmationWindow + time.Second)
	s.waitUsage(t, "the pending pods' templates once the reservations expired", "platform", nonPreemptible, guarantee)
	for _, name := range []string{"build-c", "build-d"} {
		pod, err := buildPod(name)
		switch {
		case apierrors.IsForbidden(err):
			t.Logf("pod %s denied: %v", name, err)
		case err != nil:
			t.Fatalf("create pod %s: %v", name, err)
		case pod.Labels[ledger.LabelPreemptible] != "true":
			t.Errorf("pod %s, over platform's full guarantee of %d, has mandate.dev/preemptible=%q, want true", name, guarantee, pod.Labels[ledger.LabelPreemptible])
		}
	}
	for i, r := range s.replicas {
		if got := nonPreemptible(r.State.Usage("platform")); got > guarantee {
			t.Errorf("replica %d: platform holds %d non-preemptible GPUs, over its guarantee of %d", i, got, guarantee)
		}
	}
}
