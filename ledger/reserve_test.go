package ledger

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/workload"
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

// TestRequestReservationConfirmedByAnnotation: pods admitted without a name
// (generateName) are reserved under their request's key and confirm it by
// the annotation Mandate wrote, so they count once; a pod of another tenant
// carrying the same key confirms nothing.
func TestRequestReservationConfirmedByAnnotation(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	l.UpsertNamespace(ns("v", "vision"))
	key := RequestKey("p", "3f1c")
	require.Equal(t, "uid/p/3f1c", key)
	require.True(t, IsRequestKey("p", key))
	require.False(t, IsRequestKey("v", key))
	require.Empty(t, RequestKey("p", ""))
	l.Reserve(key, "product", map[string]int{"nvidia.com/gpu": 2}, false, time.Minute)

	forged := gpuPod("v", "forged", "train", 1, corev1.PodPending, nil)
	forged.Annotations = map[string]string{workload.AnnotationReservation: key}
	l.UpsertPod(forged)
	require.Equal(t, 1, l.Reservations(), "another tenant's pod does not confirm the reservation")
	require.Equal(t, Usage{Total: 2, NonPreemptible: 2}, l.Usage("product")["product"]["nvidia.com/gpu"])

	pod := gpuPod("p", "web-7d9f-x2k4q", "build", 2, corev1.PodPending, nil)
	pod.Annotations = map[string]string{workload.AnnotationReservation: key}
	l.UpsertPod(pod)
	require.Equal(t, 0, l.Reservations())
	require.Equal(t, Usage{Total: 2, NonPreemptible: 2}, l.Usage("product")["product"]["nvidia.com/gpu"], "the pod replaces its reservation")
}

// TestStoredPodIsNotReservedAgain: a create of a pod whose name is taken
// fails (AlreadyExists); its admission must not leave a reservation behind.
func TestStoredPodIsNotReservedAgain(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	l.UpsertPod(gpuPod("p", "a", "build", 4, corev1.PodRunning, nil))
	l.Reserve(WorkloadKey("v1", "Pod", "p", "a"), "product", map[string]int{"nvidia.com/gpu": 4}, false, time.Minute)
	require.Equal(t, 0, l.Reservations())
	require.Equal(t, 4, l.Usage("product")["product"]["nvidia.com/gpu"].Total)
}

// TestGangPodClaims: an owner admitted for 2 GPU pods lends its directives
// to 2 pods at a time, its counted pods and pending claims together; a
// claim is confirmed by its pod being counted, ends with the window, and a
// request reinvoked keeps its claim.
func TestGangPodClaims(t *testing.T) {
	l := New(testConfig)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	l.UpsertNamespace(ns("p", "product"))
	const owner, size = "job-uid", 2
	claim := func(key string, size int, ttl time.Duration) bool {
		ok, _ := l.ClaimGangPod(owner, "product", key, size, ttl)
		return ok
	}
	require.True(t, claim(RequestKey("p", "r1"), size, time.Minute))
	require.True(t, claim(RequestKey("p", "r1"), size, time.Minute), "the same request again")
	require.True(t, claim("", size, time.Minute), "a dry run sees a free slot")
	require.True(t, claim(WorkloadKey("v1", "Pod", "p", "named"), size, time.Minute))
	require.False(t, claim(RequestKey("p", "r3"), size, time.Minute), "beyond the admitted size")
	require.False(t, claim("", size, time.Minute))

	// The first pod is stored: its claim becomes a counted pod; still full.
	pod := gpuPod("p", "train-x7k2p", "build", 1, corev1.PodPending, nil)
	pod.Annotations = map[string]string{workload.AnnotationReservation: RequestKey("p", "r1")}
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: owner, Controller: ptr(true)}}
	l.UpsertPod(pod)
	require.False(t, claim(RequestKey("p", "r4"), size, time.Minute))

	// The named pod's create never completed: its claim ends with the window.
	now = now.Add(2 * time.Minute)
	require.True(t, claim(RequestKey("p", "r5"), size, time.Minute))
	// A finished pod frees its slot.
	pod.Status.Phase = corev1.PodSucceeded
	l.UpsertPod(pod)
	require.True(t, claim(RequestKey("p", "r6"), size, time.Minute))
	require.False(t, claim(RequestKey("p", "r7"), size, time.Minute))

	_, added := l.ClaimGangPod(owner, "product", RequestKey("p", "r6"), size, time.Minute)
	require.False(t, added, "a request claiming again takes no new slot")
}

// TestForgedGangOwnerTakesNoSlot: a pod of another tenant whose creator
// wrote the gang-owner annotation naming an admitted owner counts under
// its own tenant, and never takes the owner's pod slots; so does one of
// a namespace without a tenant.
func TestForgedGangOwnerTakesNoSlot(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	l.UpsertNamespace(ns("r", "research"))
	l.UpsertNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scratch"}})
	const owner, size = "pytorchjob-uid", 2
	forge := func(namespace, name string) {
		pod := gpuPod(namespace, name, "build", 8, corev1.PodPending, nil)
		pod.Annotations = map[string]string{workload.AnnotationGangOwner: `{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","name":"llm","uid":"` + owner + `"}`}
		l.UpsertPod(pod)
	}
	forge("r", "forged-1")
	forge("r", "forged-2")
	forge("scratch", "forged-3")
	for i, key := range []string{RequestKey("p", "w1"), RequestKey("p", "w2")} {
		ok, _ := l.ClaimGangPod(owner, "product", key, size, time.Minute)
		require.True(t, ok, "the owner's own pod %d finds its slot", i)
	}
	ok, _ := l.ClaimGangPod(owner, "product", RequestKey("p", "w3"), size, time.Minute)
	require.False(t, ok, "beyond the admitted size")

	// Moving a namespace between tenants moves its pods' counts with it.
	l2 := New(testConfig)
	l2.UpsertNamespace(ns("r", "research"))
	forge2 := gpuPod("r", "forged", "build", 8, corev1.PodPending, nil)
	forge2.Annotations = map[string]string{workload.AnnotationGangOwner: `{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","name":"llm","uid":"` + owner + `"}`}
	l2.UpsertPod(forge2)
	l2.UpsertNamespace(ns("r", "product"))
	ok, _ = l2.ClaimGangPod(owner, "product", RequestKey("p", "w1"), 1, time.Minute)
	require.False(t, ok, "once its namespace is the owner's tenant's, the pod counts in the owner's slots")
	l2.DeletePod("r", "forged")
	ok, _ = l2.ClaimGangPod(owner, "product", RequestKey("p", "w1"), 1, time.Minute)
	require.True(t, ok, "and leaves them when deleted")
}

// TestGangClaimsAreTreeEntries: gang claims are listed among a tree's
// reservations, so a shared ledger stores them, and a replica that reads
// them back counts their slots as taken.
func TestGangClaimsAreTreeEntries(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	const owner, size = "job-uid", 2
	_, added := l.ClaimGangPod(owner, "product", RequestKey("p", "r1"), size, time.Minute)
	require.True(t, added)
	rs := l.TreeReservations(l.RootOf("product"))
	require.Len(t, rs, 1)
	for _, r := range rs {
		require.Equal(t, owner, r.Owner)
		require.Equal(t, "product", r.Tenant)
	}

	other := New(testConfig)
	other.UpsertNamespace(ns("p", "product"))
	other.SetTreeReservations(other.RootOf("product"), rs)
	ok, _ := other.ClaimGangPod(owner, "product", RequestKey("p", "r2"), size, time.Minute)
	require.True(t, ok, "one slot left")
	ok, _ = other.ClaimGangPod(owner, "product", RequestKey("p", "r3"), size, time.Minute)
	require.False(t, ok, "the claim read back and this one fill the owner's 2 slots")
	require.Zero(t, other.Usage("product")["product"]["nvidia.com/gpu"].Total, "a claim holds no GPUs of its own")

	other.SetTreeReservations(other.RootOf("product"), nil)
	ok, _ = other.ClaimGangPod(owner, "product", RequestKey("p", "r3"), size, time.Minute)
	require.True(t, ok, "claims the shared ledger no longer holds are gone")
}

// TestSplitWorkloadKey: a WorkloadKey reads back; a request key does not.
func TestSplitWorkloadKey(t *testing.T) {
	g, k, ns, name, ok := SplitWorkloadKey(WorkloadKey("batch/v1", "Job", "p", "train"))
	require.True(t, ok)
	require.Equal(t, []string{"batch", "Job", "p", "train"}, []string{g, k, ns, name})
	_, k, _, _, ok = SplitWorkloadKey(WorkloadKey("v1", "Pod", "p", "a"))
	require.True(t, ok)
	require.Equal(t, "Pod", k)
	_, _, _, _, ok = SplitWorkloadKey(RequestKey("p", "3f1c"))
	require.False(t, ok)
}
