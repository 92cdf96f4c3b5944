package ledger

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/topology/topologytest"
	"github.com/mandate-dev/mandate/workload"
)

var testConfig = Config{
	Parents:            map[string]string{"org": "", "research": "org", "vision": "research", "product": "org"},
	PreemptibleClasses: map[string]bool{"train": true, "build": false},
}

func ns(name, tenant string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{workload.LabelTenant: tenant}}}
}

func gpuPod(namespace, name, class string, gpus int64, phase corev1.PodPhase, labels map[string]string) *corev1.Pod {
	return topologytest.GPUPod(namespace, name, gpus, topologytest.WithPriorityClass(class), topologytest.InPhase(phase), topologytest.WithLabels(labels))
}

func TestUsageRollsUpTheHierarchy(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("vision-ns", "vision"))
	l.UpsertNamespace(ns("product-ns", "product"))
	l.UpsertPod(gpuPod("vision-ns", "a", "train", 8, corev1.PodRunning, nil))
	l.UpsertPod(gpuPod("vision-ns", "b", "build", 4, corev1.PodPending, nil))
	l.UpsertPod(gpuPod("vision-ns", "done", "build", 4, corev1.PodSucceeded, nil))
	l.UpsertPod(gpuPod("product-ns", "c", "build", 2, corev1.PodRunning, nil))

	got := l.Usage("vision")
	want := map[string]map[string]Usage{
		"vision":   {"nvidia.com/gpu": {Total: 12, NonPreemptible: 4}},
		"research": {"nvidia.com/gpu": {Total: 12, NonPreemptible: 4}},
		"org":      {"nvidia.com/gpu": {Total: 14, NonPreemptible: 6}},
	}
	require.Equal(t, want, got)
}

func TestPodUpdatesCountOnce(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	pod := gpuPod("p", "a", "build", 8, corev1.PodPending, nil)
	l.UpsertPod(pod)
	pod.Status.Phase = corev1.PodRunning
	l.UpsertPod(pod)
	l.UpsertPod(pod)
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, l.Usage("product")["product"]["nvidia.com/gpu"])
	pod.Status.Phase = corev1.PodSucceeded
	l.UpsertPod(pod)
	require.Equal(t, Usage{}, l.Usage("product")["product"]["nvidia.com/gpu"])
	l.UpsertPod(gpuPod("p", "b", "build", 2, corev1.PodRunning, nil))
	l.DeletePod("p", "b")
	require.Equal(t, Usage{}, l.Usage("product")["org"]["nvidia.com/gpu"])
}

func TestExplicitPreemptibilityWins(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	l.UpsertPod(gpuPod("p", "a", "build", 8, corev1.PodRunning, map[string]string{LabelPreemptible: "true"}))
	l.UpsertPod(gpuPod("p", "b", "train", 2, corev1.PodRunning, map[string]string{facts.KAI.Preemptibility.Name: facts.KAI.Preemptibility.NonPreemptible}))
	require.Equal(t, Usage{Total: 10, NonPreemptible: 2}, l.Usage("product")["product"]["nvidia.com/gpu"])
}

func TestNamespaceRelabelMovesUsage(t *testing.T) {
	l := New(testConfig)
	l.UpsertPod(gpuPod("x", "a", "train", 8, corev1.PodRunning, nil)) // before its namespace
	l.UpsertNamespace(ns("x", "vision"))
	require.Equal(t, 8, l.Usage("vision")["org"]["nvidia.com/gpu"].Total)
	l.UpsertNamespace(ns("x", "product"))
	require.Equal(t, 0, l.Usage("vision")["vision"]["nvidia.com/gpu"].Total)
	require.Equal(t, 8, l.Usage("product")["product"]["nvidia.com/gpu"].Total)
	l.DeleteNamespace("x")
	require.Equal(t, 0, l.Usage("product")["org"]["nvidia.com/gpu"].Total)
}

func TestSetConfigRecounts(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("x", "vision"))
	l.UpsertPod(gpuPod("x", "a", "train", 8, corev1.PodRunning, nil))
	cfg := Config{Parents: map[string]string{"vision": "product", "product": ""}, PreemptibleClasses: map[string]bool{}}
	l.SetConfig(cfg)
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, l.Usage("vision")["product"]["nvidia.com/gpu"])
	require.NotContains(t, l.Usage("vision"), "org")
}

func TestCyclicHierarchyTerminates(t *testing.T) {
	l := New(Config{Parents: map[string]string{"a": "b", "b": "a"}})
	l.UpsertNamespace(ns("x", "a"))
	l.UpsertPod(gpuPod("x", "p", "", 1, corev1.PodRunning, nil))
	require.Len(t, l.Usage("a"), 2)
}
