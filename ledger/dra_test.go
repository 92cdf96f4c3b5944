package ledger

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// draPod is a pod of class whose GPUs come from the DRA claims it names
// (no extended resources).
func draPod(namespace, name, class string, phase corev1.PodPhase, claims ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:   corev1.PodSpec{PriorityClassName: class, Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{Phase: phase}}
	for _, c := range claims {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: "gpus-" + c, ResourceClaimName: ptr(c)})
	}
	return p
}

var eightGPUs = map[string]int{"nvidia.com/gpu": 8}

// TestRunningDRAPodsCount: two running pods holding allocated 8-GPU claims
// count 16 non-preemptible GPUs (their class is not preemptible), with no
// reservation left; in whichever order pods and claims arrive.
func TestRunningDRAPodsCount(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	l.UpsertPod(draPod("p", "a", "build", corev1.PodRunning, "claim-a"))
	require.Equal(t, Usage{}, l.Usage("product")["product"]["nvidia.com/gpu"], "a claim not seen holds nothing")
	l.UpsertClaim("p", "claim-a", eightGPUs)
	l.UpsertClaim("p", "claim-b", eightGPUs)
	l.UpsertPod(draPod("p", "b", "build", corev1.PodRunning, "claim-b"))
	require.Equal(t, Usage{Total: 16, NonPreemptible: 16}, l.Usage("product")["org"]["nvidia.com/gpu"])

	l.UpsertPod(draPod("p", "t", "train", corev1.PodRunning, "claim-t"))
	l.UpsertClaim("p", "claim-t", eightGPUs)
	require.Equal(t, Usage{Total: 24, NonPreemptible: 16}, l.Usage("product")["product"]["nvidia.com/gpu"], "a preemptible class's claim is preemptible")
}

// TestSharedClaimCountsOnce: a claim several pods hold counts once,
// whichever pods come and go, until the last holder ends.
func TestSharedClaimCountsOnce(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	l.UpsertClaim("p", "shared", eightGPUs)
	for _, name := range []string{"c", "a", "b"} {
		l.UpsertPod(draPod("p", name, "build", corev1.PodRunning, "shared"))
		require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, l.Usage("product")["product"]["nvidia.com/gpu"], "after %s", name)
	}
	l.DeletePod("p", "a") // the counter
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, l.Usage("product")["product"]["nvidia.com/gpu"], "another holder counts it")
	l.UpsertPod(draPod("p", "b", "build", corev1.PodSucceeded, "shared"))
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, l.Usage("product")["product"]["nvidia.com/gpu"], "a running holder counts it")
	l.UpsertPod(draPod("p", "c", "build", corev1.PodSucceeded, "shared"))
	require.Equal(t, Usage{}, l.Usage("product")["product"]["nvidia.com/gpu"], "no running holder")
}

// TestDeallocationReleases: a claim's devices count while allocated; once
// deallocated (nothing left to count) or deleted, its pod counts nothing.
func TestDeallocationReleases(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	l.UpsertClaim("p", "claim-a", eightGPUs)
	l.UpsertClaim("p", "claim-b", eightGPUs)
	l.UpsertPod(draPod("p", "a", "build", corev1.PodRunning, "claim-a"))
	l.UpsertPod(draPod("p", "b", "build", corev1.PodRunning, "claim-b"))
	require.Equal(t, 16, l.Usage("product")["product"]["nvidia.com/gpu"].NonPreemptible)
	l.UpsertClaim("p", "claim-a", nil)
	require.Equal(t, 8, l.Usage("product")["product"]["nvidia.com/gpu"].NonPreemptible)
	l.DeleteClaim("p", "claim-b")
	require.Equal(t, Usage{}, l.Usage("product")["product"]["nvidia.com/gpu"])
	l.UpsertClaim("p", "claim-b", map[string]int{"nvidia.com/gpu": 2})
	require.Equal(t, Usage{Total: 2, NonPreemptible: 2}, l.Usage("product")["product"]["nvidia.com/gpu"], "allocated again, recounted")
}

// TestDRAPodConsumesItsReservation: the reservation admission made for a
// DRA pod is consumed by the pod's claim devices, never counted twice.
func TestDRAPodConsumesItsReservation(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	l.Reserve(WorkloadKey("v1", "Pod", "p", "a"), "product", eightGPUs, false, time.Minute)
	l.UpsertPod(draPod("p", "a", "build", corev1.PodPending, "claim-a"))
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, l.Usage("product")["product"]["nvidia.com/gpu"], "the reservation holds until the claim is seen")
	l.UpsertClaim("p", "claim-a", eightGPUs)
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, l.Usage("product")["product"]["nvidia.com/gpu"], "the claim replaces the reservation")
	require.Equal(t, 0, l.Reservations())
	l.now = func() time.Time { return time.Now().Add(time.Hour) }
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, l.Usage("product")["product"]["nvidia.com/gpu"], "after the window")
}
