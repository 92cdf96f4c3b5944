package webhook

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// recordingDecider counts decisions and keeps the last input.
type recordingDecider struct {
	next  Decider
	calls atomic.Int32
	mu    sync.Mutex
	last  evaluator.Input
}

func (r *recordingDecider) Decide(ctx context.Context, in evaluator.Input) (evaluator.Decision, error) {
	r.calls.Add(1)
	r.mu.Lock()
	r.last = in
	r.mu.Unlock()
	return r.next.Decide(ctx, in)
}

var (
	evalOnce sync.Once
	theEval  *evaluator.Evaluator
)

// testEvaluator is the default policies, prepared once per test binary.
func testEvaluator(t testing.TB) *evaluator.Evaluator {
	t.Helper()
	evalOnce.Do(func() { theEval = fixtures.Evaluator(t, "embedded", nil) })
	if theEval == nil {
		t.Fatal("evaluator: preparing the default policies failed in an earlier test")
	}
	return theEval
}

// newTestReviewer is a Reviewer over 8 nodes of one leaf block, the
// tenant namespaces, and one running 1-GPU platform pod on node 0 (so no
// block has 8 whole nodes free).
func newTestReviewer(t testing.TB) (*Reviewer, *recordingDecider) {
	t.Helper()
	ev := testEvaluator(t)
	st, err := cluster.New(ev.Model())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		st.UpsertNode(fixtures.GPUNode(i))
	}
	for ns, tenant := range fixtures.Tenants() {
		st.UpsertNamespace(fixtures.TenantNamespace(ns, tenant))
	}
	st.UpsertPod(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "busy", Namespace: "platform"},
		Spec: corev1.PodSpec{NodeName: "h100-b1-0", Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	})
	rec := &recordingDecider{next: ev}
	return &Reviewer{Decider: rec, State: st}, rec
}

// admissionRequest builds a request for a YAML object.
func admissionRequest(t testing.TB, op admissionv1.Operation, objYAML, oldYAML string, user string, groups ...string) admission.Request {
	t.Helper()
	raw := func(y string) []byte {
		if y == "" {
			return nil
		}
		b, err := yaml.YAMLToJSON([]byte(y))
		if err != nil {
			t.Fatalf("fixture: %v", err)
		}
		return b
	}
	obj := raw(objYAML)
	if obj == nil {
		obj = raw(oldYAML)
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(obj, &meta); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	gv, err := runtimeGroupVersion(meta.APIVersion)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "0b1c2d3e-0000-4000-8000-000000000001",
		Kind:      metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: meta.Kind},
		Resource:  metav1.GroupVersionResource{Group: gv.Group, Version: gv.Version},
		Name:      meta.Metadata.Name,
		Namespace: meta.Metadata.Namespace,
		Operation: op,
		UserInfo:  authenticationv1.UserInfo{Username: user, Groups: groups},
		Object:    runtime.RawExtension{Raw: raw(objYAML)},
		OldObject: runtime.RawExtension{Raw: raw(oldYAML)},
		DryRun:    ptr.To(false),
	}}
}

func runtimeGroupVersion(apiVersion string) (metav1.GroupVersion, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return metav1.GroupVersion{Group: gv.Group, Version: gv.Version}, err
}
