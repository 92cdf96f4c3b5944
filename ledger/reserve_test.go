package ledger

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWorkloadKey(t *testing.T) {
	require.Equal(t, "/Pod/ns/p", WorkloadKey("v1", "Pod", "ns", "p"))
	require.Equal(t, "batch/Job/ns/j", WorkloadKey("batch/v1", "Job", "ns", "j"))
	require.Equal(t, "batch.volcano.sh/Job/ns/j", WorkloadKey("batch.volcano.sh/v1alpha1", "Job", "ns", "j"))
}

func TestReservedPodCountsOnce(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	l.Reserve(WorkloadKey("v1", "Pod", "p", "a"), "product", map[string]int{"nvidia.com/gpu": 8}, false, time.Minute)
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, l.Usage("product")["org"]["nvidia.com/gpu"])

	l.UpsertPod(gpuPod("p", "a", "build", 8, corev1.PodPending, nil))
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, l.Usage("product")["org"]["nvidia.com/gpu"], "the pod replaces its reservation")
	require.Equal(t, 0, l.Reservations())
}

func TestGangReservationShrinksAsPodsAppear(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("v", "vision"))
	key := WorkloadKey("batch/v1", "Job", "v", "train")
	l.Reserve(key, "vision", map[string]int{"nvidia.com/gpu": 32}, true, time.Minute)
	for i, name := range []string{"train-0", "train-1", "train-2", "train-3"} {
		pod := gpuPod("v", name, "train", 8, corev1.PodPending, map[string]string{LabelPreemptible: "true"})
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", Controller: ptr(true)}}
		l.UpsertPod(pod)
		require.Equal(t, 32, l.Usage("vision")["vision"]["nvidia.com/gpu"].Total, "after pod %d", i)
	}
	require.Equal(t, 0, l.Reservations())
	require.Equal(t, 0, l.Usage("vision")["vision"]["nvidia.com/gpu"].NonPreemptible)
}

func TestReservationsExpire(t *testing.T) {
	l := New(testConfig)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	l.Reserve("k", "vision", map[string]int{"nvidia.com/gpu": 4}, true, time.Minute)
	require.Equal(t, 4, l.Usage("vision")["org"]["nvidia.com/gpu"].Total)
	now = now.Add(2 * time.Minute)
	require.Equal(t, 0, l.Usage("vision")["org"]["nvidia.com/gpu"].Total)
	require.Equal(t, 0, l.Reservations())
}

func TestLockTreeSerialisesOneTree(t *testing.T) {
	l := New(testConfig)
	unlock := l.LockTree("vision")
	acquired := make(chan struct{})
	go func() {
		defer close(acquired)
		l.LockTree("product")() // same root: org
	}()
	select {
	case <-acquired:
		t.Fatal("a second admission of the same tree went ahead while the first held the lock")
	case <-time.After(50 * time.Millisecond):
	}
	unlock()
	<-acquired
	other := New(Config{Parents: map[string]string{"x": "", "y": ""}})
	var wg sync.WaitGroup
	u := other.LockTree("x")
	wg.Add(1)
	go func() { defer wg.Done(); other.LockTree("y")() }()
	wg.Wait() // different roots do not wait for each other
	u()
}

func ptr[T any](v T) *T { return &v }
