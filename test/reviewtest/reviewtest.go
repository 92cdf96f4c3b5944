// Package reviewtest holds the helpers the tests of the decision service
// and of its callers share: a service over a small fixture cluster, a
// decider that records what it was asked, and readers of manifests and
// metrics.
package reviewtest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// RecordingDecider counts decisions and keeps the last input.
type RecordingDecider struct {
	Next  review.Decider
	calls atomic.Int32
	mu    sync.Mutex
	last  evaluator.Input
}

// Decide implements review.Decider.
func (r *RecordingDecider) Decide(ctx context.Context, in evaluator.Input) (evaluator.Decision, error) {
	r.calls.Add(1)
	r.mu.Lock()
	r.last = in
	r.mu.Unlock()
	return r.Next.Decide(ctx, in)
}

// Calls is how many decisions were asked for.
func (r *RecordingDecider) Calls() int { return int(r.calls.Load()) }

// Last is the input of the last decision.
func (r *RecordingDecider) Last() evaluator.Input {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// MeetingDecider holds its first two decisions until both are inside
// Decide (so they provably run at once; a second one that never starts
// fails the first after a generous deadline, which is not asserted on),
// then decides every workload with Next.
type MeetingDecider struct {
	Next    review.Decider
	entered atomic.Int32
	once    sync.Once
	both    chan struct{}
}

// Decide implements review.Decider.
func (m *MeetingDecider) Decide(ctx context.Context, in evaluator.Input) (evaluator.Decision, error) {
	m.once.Do(func() { m.both = make(chan struct{}) })
	switch m.entered.Add(1) {
	case 1:
		select {
		case <-m.both:
		case <-time.After(2 * time.Minute):
			return evaluator.Decision{}, errors.New("the second decision never started while the first was deciding")
		}
	case 2:
		close(m.both)
	}
	return m.Next.Decide(ctx, in)
}

// FailingDecider fails every decision with Err.
type FailingDecider struct{ Err error }

// Decide implements review.Decider.
func (f FailingDecider) Decide(context.Context, evaluator.Input) (evaluator.Decision, error) {
	return evaluator.Decision{}, f.Err
}

var (
	defaultOnce sync.Once
	defaultEval *evaluator.Evaluator
)

// DefaultEvaluator is the embedded default policies (revision "embedded"),
// prepared once per test binary.
func DefaultEvaluator(t testing.TB) *evaluator.Evaluator {
	t.Helper()
	defaultOnce.Do(func() { defaultEval = fixtures.Evaluator(t, "embedded", nil) })
	if defaultEval == nil {
		t.Fatal("evaluator: preparing the default policies failed in an earlier test")
	}
	return defaultEval
}

// Service is a decision service over 8 nodes of one leaf block, the
// tenant namespaces, and one running 1-GPU platform pod on node 0 (so no
// block has 8 whole nodes free), deciding with the default policies
// through a RecordingDecider.
func Service(t testing.TB) (*review.Service, *RecordingDecider) {
	t.Helper()
	ev := DefaultEvaluator(t)
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
	rec := &RecordingDecider{Next: ev}
	return &review.Service{Decider: rec, State: st}, rec
}

// Object decodes a YAML manifest.
func Object(t testing.TB, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return obj
}

// Counter reads the value of a counter registered with controller-runtime's
// metrics registry, by name and label values; 0 when it has no sample yet.
func Counter(t testing.TB, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if matches(m, labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func matches(m *dto.Metric, labels map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := labels[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(labels)
}
