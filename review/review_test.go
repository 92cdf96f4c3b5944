package review_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/workload"
)

func exampleReviewer(t *testing.T) *review.Service {
	t.Helper()
	// Bursts of admissions decide at once, with the race detector on a busy
	// machine too: the evaluation deadline (which bounds a runaway policy,
	// tested in package evaluator) must not be what fails them.
	p, err := evaluator.LoadFS(policies.FS, "test")
	require.NoError(t, err)
	ev, err := evaluator.New(context.Background(), p, evaluator.Options{Timeout: time.Minute})
	require.NoError(t, err)
	state, err := cluster.New(ev.Model())
	require.NoError(t, err)
	require.NoError(t, state.LoadFile("../examples/cluster.yaml"))
	return &review.Service{Decider: ev, State: state}
}

func buildPod(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "product"},
		"spec": map[string]any{
			"priorityClassName": "build",
			"containers": []any{map[string]any{
				"name": "c", "image": "x",
				"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": "1"}},
			}},
		},
	}}
}

// TestConcurrentAdmissionsSpendQuotaOnce: product has 16 of its 128
// guaranteed GPUs left in the example cluster. Of 200 one-GPU build pods
// admitted concurrently, before any informer sees them, exactly 16 stay
// non-preemptible and the rest are turned preemptible.
func TestConcurrentAdmissionsSpendQuotaOnce(t *testing.T) {
	r := exampleReviewer(t)
	var nonPreemptible, preemptible atomic.Int32
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rv, err := r.Review(context.Background(), buildPod(fmt.Sprintf("p-%d", i)), evaluator.Request{Operation: "CREATE"})
			if !rv.Decision.Allowed || err != nil {
				t.Errorf("pod %d: allowed=%v err=%v", i, rv.Decision.Allowed, err)
				return
			}
			if rv.Decision.Directives.Preemptible {
				preemptible.Add(1)
			} else {
				nonPreemptible.Add(1)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 16, nonPreemptible.Load())
	require.EqualValues(t, 184, preemptible.Load())
	require.Equal(t, 200+112, r.State.Usage("product")["product"]["nvidia.com/gpu"].Total)
}

// TestGenerateNamePodsSpendQuotaOnce: pods without a name yet (every
// Deployment's, ReplicaSet's and Job's) are reserved under their request's
// uid, which Mandate writes on them for their stored pods to confirm; so
// 40 of them admitted concurrently get exactly product's 16 guaranteed
// GPUs left. A pod keeps no reservation key of another namespace.
func TestGenerateNamePodsSpendQuotaOnce(t *testing.T) {
	r := exampleReviewer(t)
	var nonPreemptible atomic.Int32
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pod := buildPod("")
			pod.SetGenerateName("web-")
			uid := fmt.Sprintf("uid-%d", i)
			rv, err := r.Review(context.Background(), pod, evaluator.Request{Operation: "CREATE", UID: uid})
			if err != nil || !rv.Decision.Allowed {
				t.Errorf("pod %d: allowed=%v err=%v", i, rv.Decision.Allowed, err)
				return
			}
			if got := rv.Mutated.GetAnnotations()[workload.AnnotationReservation]; got != "uid/product/"+uid {
				t.Errorf("pod %d carries reservation %q, want uid/product/%s", i, got, uid)
			}
			if !rv.Decision.Directives.Preemptible {
				nonPreemptible.Add(1)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 16, nonPreemptible.Load())

	// A key of another namespace's reservation, copied onto a pod, names
	// nothing: the pod is reserved by its own name and the key is dropped.
	before := r.State.Usage("product")["product"]["nvidia.com/gpu"]
	named := buildPod("named")
	named.SetAnnotations(map[string]string{workload.AnnotationReservation: "uid/vision/uid-3"})
	rv, err := r.Review(context.Background(), named, evaluator.Request{Operation: "CREATE", UID: "u-named"})
	require.NoError(t, err)
	require.NotContains(t, rv.Mutated.GetAnnotations(), workload.AnnotationReservation)
	require.Equal(t, before.Total+1, r.State.Usage("product")["product"]["nvidia.com/gpu"].Total, "reserved, and nothing released")
}

func TestDryRunReservesNothing(t *testing.T) {
	r := exampleReviewer(t)
	before := r.State.Usage("product")["product"]["nvidia.com/gpu"]
	rv, err := r.Review(context.Background(), buildPod("dry"), evaluator.Request{Operation: "CREATE", DryRun: true})
	require.NoError(t, err)
	require.True(t, rv.Decision.Allowed)
	require.Equal(t, before, r.State.Usage("product")["product"]["nvidia.com/gpu"])
}

// TestReinvocationDecidesTheSame: the API server calls /mutate again with
// the object Mandate mutated when an in-tree plugin changed it afterwards.
// The last guaranteed GPU's pod, decided again, must neither count its own
// reservation (and turn preemptible) nor read Mandate's own
// non-preemptible mark as the tenant exempting itself.
func TestReinvocationDecidesTheSame(t *testing.T) {
	r := exampleReviewer(t)
	for i := range 15 {
		_, err := r.Review(context.Background(), buildPod(fmt.Sprintf("p-%d", i)), evaluator.Request{Operation: "CREATE"})
		require.NoError(t, err)
	}
	first, err := r.Review(context.Background(), buildPod("last"), evaluator.Request{Operation: "CREATE"})
	require.NoError(t, err)
	require.True(t, first.Decision.Allowed)
	require.False(t, first.Decision.Directives.Preemptible, "the 16th of 16 guaranteed GPUs")
	used := r.State.Usage("product")["product"]["nvidia.com/gpu"]

	again, err := r.Review(context.Background(), first.Mutated, evaluator.Request{Operation: "CREATE"})
	require.NoError(t, err)
	require.True(t, again.Decision.Allowed, "violations: %v", again.Decision.Violations)
	assert.False(t, again.Decision.Directives.Preemptible)
	assert.Equal(t, first.Decision.Directives, again.Decision.Directives)
	assert.Equal(t, used, r.State.Usage("product")["product"]["nvidia.com/gpu"], "reserved once")
}

// namespaceReader answers a Get of one namespace, or an error.
type namespaceReader struct {
	ns   *corev1.Namespace
	err  error
	gets atomic.Int32
}

func (n *namespaceReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	n.gets.Add(1)
	if n.err != nil {
		return n.err
	}
	if n.ns == nil || key.Name != n.ns.Name {
		return apierrors.NewNotFound(corev1.Resource("namespaces"), key.Name)
	}
	n.ns.DeepCopyInto(obj.(*corev1.Namespace))
	return nil
}

// TestNamespaceNotYetSeen: a pod in a namespace the informers have not
// delivered yet is decided with the namespace read from the API server,
// not denied as tenant-less; a namespace that does not exist still is, and
// an unreadable one is an error, not a guess.
func TestNamespaceNotYetSeen(t *testing.T) {
	pod := func(ns string) *unstructured.Unstructured {
		p := buildPod("fresh")
		p.SetNamespace(ns)
		return p
	}
	r := exampleReviewer(t)
	reader := &namespaceReader{ns: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "product-new",
		Labels: map[string]string{workload.LabelTenant: "product"}}}}
	r.Namespaces = reader

	rv, err := r.Review(context.Background(), pod("product-new"), evaluator.Request{Operation: "CREATE", DryRun: true})
	require.NoError(t, err)
	assert.True(t, rv.Decision.Allowed, "violations: %v", rv.Decision.Violations)
	assert.Equal(t, "product", rv.Workload.Tenant)

	rv, err = r.Review(context.Background(), pod("nowhere"), evaluator.Request{Operation: "CREATE", DryRun: true})
	require.NoError(t, err)
	require.False(t, rv.Decision.Allowed)
	assert.Equal(t, "TENANT_MISSING", rv.Decision.Violations[0].Code)

	gets := reader.gets.Load()
	_, err = r.Review(context.Background(), buildPod("known"), evaluator.Request{Operation: "CREATE", DryRun: true})
	require.NoError(t, err)
	assert.Equal(t, gets, reader.gets.Load(), "a namespace the state knows is not read")

	r.Namespaces = &namespaceReader{err: errors.New("connection refused")}
	_, err = r.Review(context.Background(), pod("product-new"), evaluator.Request{Operation: "CREATE", DryRun: true})
	require.ErrorContains(t, err, "unable to read namespace product-new")
}
