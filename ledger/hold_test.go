package ledger

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ownedPod is a GPU pod of the Job named job with the given UID.
func ownedPod(namespace, name, job, uid string, gpus int64) *corev1.Pod {
	p := gpuPod(namespace, name, "build", gpus, corev1.PodPending, nil)
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job, UID: types.UID(uid), Controller: &yes}}
	return p
}

func gpuOf(l *Ledger, tenant string) Usage { return l.Usage(tenant)[tenant]["nvidia.com/gpu"] }

// TestHoldLivesUntilTheWorkloadEnds: a stored Job's hold counts its whole
// demand long after its admission's reservation would have expired; its
// pods, however late, count under it and never twice; suspended, it holds
// nothing.
func TestHoldLivesUntilTheWorkloadEnds(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := New(testConfig)
	l.now = func() time.Time { return now }
	l.UpsertNamespace(ns("p", "product"))
	key := WorkloadKey("batch/v1", "Job", "p", "train")
	l.Reserve(key, "product", map[string]int{"nvidia.com/gpu": 8}, false, time.Minute)
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, gpuOf(l, "product"))

	hold := Hold{Namespace: "p", UID: "u1", Generation: 1, GPUs: map[string]int{"nvidia.com/gpu": 8}}
	l.UpsertHold(key, hold)
	require.Equal(t, 0, l.Reservations(), "the stored object settles the admission's reservation")
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, gpuOf(l, "product"), "the hold counts it once")

	now = now.Add(time.Hour) // long past any window
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, gpuOf(l, "product"), "the hold has no timer")
	l.UpsertPod(ownedPod("p", "train-0", "train", "u1", 4))
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, gpuOf(l, "product"), "a late pod counts under its owner's hold")
	l.UpsertPod(ownedPod("p", "train-1", "train", "u1", 4))
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, gpuOf(l, "product"))
	require.Equal(t, 0, l.Holds(), "its pods consume all of it")

	l.DeletePod("p", "train-1")
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, gpuOf(l, "product"), "a pod gone is held again until its replacement comes")

	suspended := hold
	suspended.Generation, suspended.GPUs = 2, nil
	l.UpsertHold(key, suspended)
	require.Equal(t, Usage{Total: 4, NonPreemptible: 4}, gpuOf(l, "product"), "suspended: only the pod left counts")
	l.DeletePod("p", "train-0")
	l.DeleteHold(key)
	require.Equal(t, Usage{}, gpuOf(l, "product"))
}

// TestChangeCountsUntilStored: a raised demand admitted for the next
// generation counts instead of the hold until the stored object shows it.
func TestChangeCountsUntilStored(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	key := WorkloadKey("batch/v1", "Job", "p", "train")
	l.UpsertHold(key, Hold{Namespace: "p", UID: "u1", Generation: 3, GPUs: map[string]int{"nvidia.com/gpu": 4}})
	l.ReserveGeneration(key, "product", map[string]int{"nvidia.com/gpu": 8}, false, 4, time.Minute)
	require.Equal(t, 8, gpuOf(l, "product").Total, "the admitted change, not the hold and it")
	l.UpsertHold(key, Hold{Namespace: "p", UID: "u1", Generation: 3, GPUs: map[string]int{"nvidia.com/gpu": 4}})
	require.Equal(t, 1, l.Reservations(), "an older stored version settles nothing")
	l.UpsertHold(key, Hold{Namespace: "p", UID: "u1", Generation: 4, GPUs: map[string]int{"nvidia.com/gpu": 8}})
	require.Equal(t, 0, l.Reservations())
	require.Equal(t, 8, gpuOf(l, "product").Total)
	l.Release(key)
	require.Equal(t, 8, gpuOf(l, "product").Total, "releasing a settled reservation leaves the hold")
}

// TestRequestKeySettledByItsWorkload: a workload admitted without a name
// settles its request's reservation once stored; its pods consume the
// hold once.
func TestRequestKeySettledByItsWorkload(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	req := RequestKey("p", "r1")
	l.Reserve(req, "product", map[string]int{"nvidia.com/gpu": 4}, false, time.Minute)
	l.UpsertHold(WorkloadKey("batch/v1", "Job", "p", "job-x7"), Hold{Namespace: "p", UID: "u1", Generation: 1, RequestKey: req,
		GPUs: map[string]int{"nvidia.com/gpu": 4}})
	require.Equal(t, 0, l.Reservations())
	require.Equal(t, 4, gpuOf(l, "product").Total)
	l.Reserve(req, "product", map[string]int{"nvidia.com/gpu": 4}, false, time.Minute)
	require.Equal(t, 4, gpuOf(l, "product").Total, "reinvoked, its request reserves nothing again")
}

// TestSettledStaysSharedForSettleTime: a settled reservation is still
// written to the shared ledger for SettleTime (replicas whose informers
// lag keep counting it), never read back as a reservation, then dropped:
// the shared ledger holds what is not stored yet, not every admission.
func TestSettledStaysSharedForSettleTime(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := New(testConfig)
	l.now = func() time.Time { return now }
	l.UpsertNamespace(ns("p", "product"))
	key := WorkloadKey("v1", "Pod", "p", "a")
	l.Reserve(key, "product", map[string]int{"nvidia.com/gpu": 2}, false, time.Hour)
	l.UpsertPod(gpuPod("p", "a", "build", 2, corev1.PodPending, nil))
	rs := l.TreeReservations("org")
	require.Contains(t, rs, key, "settled, still shared")
	l.SetTreeReservations("org", rs)
	require.Equal(t, 0, l.Reservations(), "read back, it is not counted again")
	require.Equal(t, 2, gpuOf(l, "product").Total)
	now = now.Add(SettleTime + time.Second)
	require.NotContains(t, l.TreeReservations("org"), key, "dropped after SettleTime")
	l.SetTreeReservations("org", rs)
	require.Equal(t, 0, l.Reservations(), "an old copy of the shared ledger does not bring it back")
	require.Equal(t, 2, gpuOf(l, "product").Total)
}

// TestUnstoredReservationsAreReleased: reservations and claims older than
// the grace, not seen stored, are listed once; releasing one frees its
// quota at once; one verified stored is not listed again.
func TestUnstoredReservationsAreReleased(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := New(testConfig)
	l.now = func() time.Time { return now }
	l.UpsertNamespace(ns("p", "product"))
	rejected := WorkloadKey("v1", "Pod", "p", "Bad_Name")
	stored := WorkloadKey("v1", "Pod", "p", "slow")
	l.Reserve(rejected, "product", map[string]int{"nvidia.com/gpu": 8}, false, time.Hour)
	l.Reserve(stored, "product", map[string]int{"nvidia.com/gpu": 2}, false, time.Hour)
	l.Reserve(RequestKey("p", "r1"), "product", map[string]int{"nvidia.com/gpu": 1}, false, time.Hour)
	ok, _ := l.ClaimGangPod("u1", "product", WorkloadKey("v1", "Pod", "p", "w-0"), 2, time.Hour)
	require.True(t, ok)
	require.Empty(t, l.Unverified(2*time.Second), "within the grace")
	now = now.Add(3 * time.Second)
	listed := map[string]Unstored{}
	for _, u := range l.Unverified(2 * time.Second) {
		listed[u.Key] = u
	}
	claimKey := ClaimKeyPrefix + WorkloadKey("v1", "Pod", "p", "w-0")
	require.ElementsMatch(t, []string{rejected, stored, claimKey}, slices.Collect(maps.Keys(listed)))
	require.True(t, l.ReleaseUnstored(listed[rejected]))
	l.VerifiedStored(listed[stored])
	require.True(t, l.ReleaseUnstored(listed[claimKey]))
	require.Empty(t, l.Unverified(2*time.Second))
	require.Equal(t, 3, gpuOf(l, "product").Total, "the rejected create's 8 GPUs are free")
	ok, _ = l.ClaimGangPod("u1", "product", WorkloadKey("v1", "Pod", "p", "w-1"), 1, time.Hour)
	require.True(t, ok, "the dropped claim's slot is free again")
}

// TestHoldMovesWithItsNamespace: a namespace relabelled to another tenant
// takes its workloads' holds along.
func TestHoldMovesWithItsNamespace(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	l.UpsertHold(WorkloadKey("batch/v1", "Job", "p", "j"), Hold{Namespace: "p", UID: "u", Generation: 1, GPUs: map[string]int{"nvidia.com/gpu": 4}})
	l.UpsertNamespace(ns("p", "vision"))
	require.Equal(t, Usage{}, gpuOf(l, "product"))
	require.Equal(t, 4, gpuOf(l, "vision").Total)
}

// TestConfirmedClaimIsNotReadBack: a gang pod counted here confirms its
// claim; the shared ledger still lists the claim for SettleTime, and
// reading it back must not make it pending again beside the counted pod,
// or the gang's next pod finds its slots all taken.
func TestConfirmedClaimIsNotReadBack(t *testing.T) {
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	master := WorkloadKey("v1", "Pod", "p", "train-master-0")
	ok, _ := l.ClaimGangPod("u1", "product", master, 2, time.Minute)
	require.True(t, ok)
	shared := l.TreeReservations("org")
	l.UpsertPod(ownedPod("p", "train-master-0", "train", "u1", 1))
	require.Contains(t, l.TreeReservations("org"), ClaimKeyPrefix+master, "still shared for lagging replicas")
	l.SetTreeReservations("org", shared)
	ok, _ = l.ClaimGangPod("u1", "product", WorkloadKey("v1", "Pod", "p", "train-worker-0"), 2, time.Minute)
	require.True(t, ok, "the worker takes the second slot: the master counts once")
	ok, _ = l.ClaimGangPod("u1", "product", WorkloadKey("v1", "Pod", "p", "train-worker-1"), 2, time.Minute)
	require.False(t, ok, "and no third")
}

// TestUnstoredNamesOneReservation: a reservation listed as unverified and
// then made again under the same key (the workload changed meanwhile) is
// not the one a GET answered for: it is neither released nor verified.
func TestUnstoredNamesOneReservation(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := New(testConfig)
	l.now = func() time.Time { return now }
	l.UpsertNamespace(ns("p", "product"))
	key := WorkloadKey("batch/v1", "Job", "p", "grow")
	l.Reserve(key, "product", map[string]int{"nvidia.com/gpu": 2}, false, time.Hour)
	now = now.Add(3 * time.Second)
	listed := l.Unverified(2 * time.Second)
	require.Len(t, listed, 1)
	now = now.Add(time.Millisecond)
	l.ReserveGeneration(key, "product", map[string]int{"nvidia.com/gpu": 4}, false, 2, time.Hour)
	_, ok := l.UnstoredGeneration(listed[0])
	require.False(t, ok, "the change's reservation is another one")
	require.False(t, l.ReleaseUnstored(listed[0]))
	require.Equal(t, 4, gpuOf(l, "product").Total, "the change still counts")
}
