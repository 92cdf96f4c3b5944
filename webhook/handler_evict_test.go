package webhook

import (
	"context"
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/evictguard"
	"github.com/mandate-dev/mandate/scheduler"
)

const kubeScheduler = "system:kube-scheduler"

func guardedPod(t *testing.T, preemptible bool, conditions ...corev1.PodCondition) *corev1.Pod {
	t.Helper()
	marks, err := scheduler.Marks(evaluator.Directives{PriorityClass: "build", Preemptible: preemptible})
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "build-1", Annotations: map[string]string{scheduler.AnnotationDirectives: marks}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}}}}},
		Status: corev1.PodStatus{Conditions: conditions},
	}
}

func raw(t *testing.T, obj any) runtime.RawExtension {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: data}
}

// TestEvictionGuard: /validate refuses the scheduler's DELETE, eviction
// and DisruptionTarget mark of a non-preemptible pod, counts each, and
// allows anyone else, preemptible pods and other status updates.
func TestEvictionGuard(t *testing.T) {
	protected, borrowed := guardedPod(t, false), guardedPod(t, true)
	disruption := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler}
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}
	pods := fake.NewClientBuilder().WithObjects(protected.DeepCopy()).Build()
	v := &Validator{Evictions: &Evictions{Identities: []string{kubeScheduler}, Pods: pods,
		Tenant: func(string) string { return "alpha" }}}
	podKind := metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}
	req := func(op admissionv1.Operation, sub, user string, obj, old any) admission.Request {
		r := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, Kind: podKind, SubResource: sub,
			Namespace: "team-a", Name: "build-1", UserInfo: authenticationv1.UserInfo{Username: user}}}
		if obj != nil {
			r.Object = raw(t, obj)
		}
		if old != nil {
			r.OldObject = raw(t, old)
		}
		return r
	}
	eviction := map[string]any{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": map[string]any{"name": "build-1", "namespace": "team-a"}}
	evictionKind := metav1.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}
	for _, tc := range []struct {
		name    string
		req     admission.Request
		refused evictguard.Action
	}{
		{"scheduler deletes protected", req(admissionv1.Delete, "", kubeScheduler, nil, protected), evictguard.ActionDelete},
		{"scheduler marks protected", req(admissionv1.Update, "status", kubeScheduler, guardedPod(t, false, disruption), protected), evictguard.ActionMark},
		{"scheduler evicts protected", func() admission.Request {
			r := req(admissionv1.Create, "eviction", kubeScheduler, eviction, nil)
			r.Kind = evictionKind
			return r
		}(), evictguard.ActionEvict},
		{"admin deletes protected", req(admissionv1.Delete, "", "admin", nil, protected), ""},
		{"scheduler deletes borrowed", req(admissionv1.Delete, "", kubeScheduler, nil, borrowed), ""},
		{"scheduler marks borrowed", req(admissionv1.Update, "status", kubeScheduler, guardedPod(t, true, disruption), borrowed), ""},
		{"other status update of protected", req(admissionv1.Update, "status", kubeScheduler, guardedPod(t, false, ready), protected), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := map[evictguard.Action]float64{}
			for _, a := range evictguard.Actions {
				before[a] = evictguard.Refusals(a)
			}
			resp := v.Handle(context.Background(), tc.req)
			if resp.Allowed != (tc.refused == "") {
				t.Fatalf("allowed %v, want %v: %+v", resp.Allowed, tc.refused == "", resp.Result)
			}
			for _, a := range evictguard.Actions {
				want := before[a]
				if a == tc.refused {
					want++
				}
				if got := evictguard.Refusals(a); got != want {
					t.Errorf("refusals of %s: %v, want %v", a, got, want)
				}
			}
			// NotFound: kube-scheduler then takes the victim as gone and
			// waits, instead of retrying at once; an eviction: 429, as a
			// PodDisruptionBudget answers.
			want := int32(404)
			if tc.refused == evictguard.ActionEvict {
				want = 429
			}
			if tc.refused != "" && resp.Result.Code != want {
				t.Errorf("code %d, want %d", resp.Result.Code, want)
			}
		})
	}
}
