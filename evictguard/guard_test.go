package evictguard_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/evictguard"
	"github.com/mandate-dev/mandate/scheduler"
)

// pod is a pod of 4 GPUs with directives d (nil: none).
func pod(t *testing.T, d *evaluator.Directives) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "build-1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}}}}}}
	if d != nil {
		marks, err := scheduler.Marks(*d)
		if err != nil {
			t.Fatal(err)
		}
		p.Annotations = map[string]string{scheduler.AnnotationDirectives: marks}
	}
	return p
}

// TestDecide: only a pod whose recorded directives say non-preemptible is
// protected; the refusal names the tenant, the pod and the rule.
func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		refused bool
	}{
		{"not admitted by Mandate", pod(t, nil), false},
		{"borrowed (preemptible)", pod(t, &evaluator.Directives{PriorityClass: "build", Preemptible: true}), false},
		{"within the guarantee", pod(t, &evaluator.Directives{PriorityClass: "build", Preemptible: false}), true},
		{"within the guarantee, GPUs by a DRA claim", claimPod(t), true},
		{"non-preemptible without GPUs (no guarantee weighed it)", cpuPod(t), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, a := range evictguard.Actions {
				d, err := evictguard.Decide(tc.pod, "alpha", "system:kube-scheduler", a)
				if err != nil {
					t.Fatal(err)
				}
				if d.Refused != tc.refused {
					t.Fatalf("%s: refused %v, want %v", a, d.Refused, tc.refused)
				}
				if !tc.refused {
					continue
				}
				for _, want := range []string{"tenant alpha", "team-a/build-1", evictguard.Rule, "system:kube-scheduler", "non-preemptible"} {
					if !strings.Contains(d.Message, want) {
						t.Errorf("%s: message %q does not name %q", a, d.Message, want)
					}
				}
			}
		})
	}
}

// claimPod is a non-preemptible pod whose devices come from a DRA claim.
func claimPod(t *testing.T) *corev1.Pod {
	p := cpuPod(t)
	template := "gpu"
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &template}}
	return p
}

// cpuPod is a non-preemptible pod that asks for no GPUs.
func cpuPod(t *testing.T) *corev1.Pod {
	p := pod(t, &evaluator.Directives{PriorityClass: "build", Preemptible: false})
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}
	return p
}

// TestDecideUnreadableDirectives: directives that cannot be read are an
// error (the webhook lets the pod go, as an unavailable Mandate would).
func TestDecideUnreadableDirectives(t *testing.T) {
	p := pod(t, nil)
	p.Annotations = map[string]string{scheduler.AnnotationDirectives: "{"}
	if _, err := evictguard.Decide(p, "alpha", "system:kube-scheduler", evictguard.ActionDelete); err == nil {
		t.Fatal("no error for unreadable directives")
	}
}
