package e2e

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/reviewtest"
)

// productGuaranteeLeft is what tenant product has left of its guaranteed
// nvidia.com/gpu in the example cluster (128 guaranteed, 112 in use).
const productGuaranteeLeft = 16

// TestSharedLedgerSpendsTheGuaranteeOnceAcrossReplicas: one, then three
// replicas, each with its own cluster state and local ledger, share their
// reservations through TenantLedger objects on a real API server. 1,000
// one-GPU build pods of tenant product (half named, half generateName),
// decided concurrently and spread over the replicas, leave exactly
// product's remaining guarantee non-preemptible; a replica started
// afterwards (a restart) finds the reservations in the object and turns
// its first pod preemptible. The window outlasts the burst (reservations
// nobody confirms expiring is TestUnconfirmedReservationsAreReleased's).
func TestSharedLedgerSpendsTheGuaranteeOnceAcrossReplicas(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d replicas", n), func(t *testing.T) { sharedLedgerBurst(t, n) })
	}
}

func sharedLedgerBurst(t *testing.T, n int) {
	ctrl.SetLogger(logr.Discard())
	env := envtest.Start(t)
	replicas := ledgerReplicas(t, env, n, true)
	// The first write of a kind a fresh API server stores takes it about
	// 2s, once: make the (empty) ledger before timing the burst.
	empty := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	empty.SetGroupVersionKind(cluster.TenantLedgerGVK)
	empty.SetName("helix")
	if err := env.Client.Create(context.Background(), empty); err != nil {
		t.Fatal(err)
	}
	const pods, workers = 1000, 48
	commits0, conflicts0, _ := ledgerCounts(t)
	paths0 := grantSpends(t)
	out := decideBurst(t, replicas, pods, workers, 0)
	commits1, conflicts1, _ := ledgerCounts(t)
	paths1 := grantSpends(t)
	t.Logf("TenantLedger writes %.0f (%.0f conflicts); admissions from grants %.0f, to the pool %.0f, reclaims %.0f, given back %.0f",
		commits1-commits0, conflicts1-conflicts0, paths1["grant"]-paths0["grant"], paths1["pool"]-paths0["pool"],
		paths1["reclaim"]-paths0["reclaim"], paths1["given_back"]-paths0["given_back"])
	t.Logf("%d decisions over %d replicas sharing one TenantLedger in %s (%.0f/s): p50 %s, p99 %s; %d non-preemptible, %d preemptible",
		pods, n, out.elapsed.Round(time.Millisecond), float64(pods)/out.elapsed.Seconds(),
		out.p50.Round(10*time.Microsecond), out.p99.Round(10*time.Microsecond), out.nonPreemptible, pods-out.nonPreemptible)
	if out.nonPreemptible != productGuaranteeLeft {
		t.Fatalf("%d pods run non-preemptible across the replicas, want exactly product's remaining guarantee of %d", out.nonPreemptible, productGuaranteeLeft)
	}

	restarted := ledgerReplicas(t, env, 1, true)[0]
	rv, err := restarted.Review(context.Background(), onePod(pods), evaluator.Request{Operation: "CREATE", UID: "after-restart"})
	if err != nil || !rv.Decision.Allowed {
		t.Fatalf("after a restart: allowed=%v err=%v", rv.Decision.Allowed, err)
	}
	if !rv.Decision.Directives.Preemptible {
		t.Errorf("a replica started after the burst turned its first pod non-preemptible: it did not find the reservations in the TenantLedger")
	}
}

// TestSharedLedgerDecidesOutsideTheTreeLock: with the shared ledger, two
// admissions of one tree are inside their decisions at once (the decision
// runs outside the tree's lock; only staging and the compare-and-swap are
// serialised), and 200 concurrent one-GPU build pods still leave exactly
// product's remaining guarantee non-preemptible: the stage re-checks the
// limits each decision relied on.
func TestSharedLedgerDecidesOutsideTheTreeLock(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	env := envtest.Start(t)
	replica := ledgerReplicas(t, env, 1, true)[0]
	replica.Decider = &reviewtest.MeetingDecider{Next: replica.Decider}
	out := decideBurst(t, []*review.Service{replica}, 200, 16, 0)
	if out.nonPreemptible != productGuaranteeLeft {
		t.Fatalf("%d pods run non-preemptible, want exactly product's remaining guarantee of %d", out.nonPreemptible, productGuaranteeLeft)
	}
}

// BenchmarkAdmissionLedger (make bench-admission) measures what the quota
// ledger adds to a decision: b.N one-GPU pods of tenant product decided by
// 16 concurrent callers, with each replica's own in-memory ledger (the
// reference) and with the shared TenantLedger on a real API server, by one
// and by three replicas. It reports decisions per second, p50 and p99 per
// decision, decisions per commit (batch) and conflicts per commit, after
// one warm-up decision per replica.
func BenchmarkAdmissionLedger(b *testing.B) {
	ctrl.SetLogger(logr.Discard())
	for _, c := range []struct {
		name     string
		replicas int
		shared   bool
	}{{"memory", 1, false}, {"shared-1-replica", 1, true}, {"shared-3-replicas", 3, true}} {
		b.Run(c.name, func(b *testing.B) {
			env := envtest.Start(b)
			replicas := ledgerReplicas(b, env, c.replicas, c.shared)
			// The first write of a kind a fresh API server stores takes it
			// about 2s (once per API server): not what a decision costs.
			for i, r := range replicas {
				if _, err := r.Review(context.Background(), onePod(-1-i), evaluator.Request{Operation: "CREATE", UID: fmt.Sprintf("warm-%d", i)}); err != nil {
					b.Fatal(err)
				}
			}
			commits, conflicts, batched := ledgerCounts(b)
			b.ResetTimer()
			out := decideBurst(b, replicas, b.N, 16, 0)
			b.StopTimer()
			commits2, conflicts2, batched2 := ledgerCounts(b)
			b.ReportMetric(float64(b.N)/out.elapsed.Seconds(), "decisions/s")
			b.ReportMetric(float64(out.p50.Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(out.p99.Microseconds())/1000, "p99-ms")
			if writes := (commits2 - commits) + (conflicts2 - conflicts); writes > 0 {
				b.ReportMetric((batched2-batched)/writes, "decisions/write")
				b.ReportMetric((conflicts2-conflicts)/writes, "conflicts/write")
			}
		})
	}
}

// ledgerReplicas are n decision services over the example cluster, each
// with its own state, deciding with the default policies; shared ones keep
// their reservations in TenantLedger objects of env (a 10-minute window,
// longer than any burst here).
func ledgerReplicas(tb testing.TB, env *envtest.Env, n int, shared bool) []*review.Service {
	tb.Helper()
	ev := reviewtest.DefaultEvaluator(tb)
	var out []*review.Service
	for range n {
		st, err := cluster.New(ev.Model())
		if err != nil {
			tb.Fatal(err)
		}
		if err := st.LoadFile("../../examples/cluster.yaml"); err != nil {
			tb.Fatal(err)
		}
		st.SetConfirmationWindow(10 * time.Minute)
		if shared {
			if err := cluster.CheckSharedLedger(env.Client.RESTMapper()); err != nil {
				tb.Fatal(err)
			}
			c, err := client.NewWithWatch(env.Config, client.Options{Mapper: env.Client.RESTMapper()})
			if err != nil {
				tb.Fatal(err)
			}
			st.ShareReservations(c)
			// Each replica keeps its escrowed grants, as serve does.
			st.ShareGrants(cluster.GrantOptions{Holder: fmt.Sprintf("replica-%d-%s", len(out), rand.String(4))})
			ctx, cancel := context.WithCancel(context.Background())
			tb.Cleanup(cancel)
			go func() { _ = st.RunGrants(ctx, c) }()
		}
		out = append(out, &review.Service{Decider: ev, State: st})
	}
	return out
}

type burstResult struct {
	elapsed, p50, p99 time.Duration
	nonPreemptible    int
}

// decideBurst decides pods one-GPU pods (onePod from first on) with
// workers concurrent callers, spread round-robin over the replicas.
func decideBurst(tb testing.TB, replicas []*review.Service, pods, workers, first int) burstResult {
	var nonPreemptible atomic.Int32
	latencies := make([]time.Duration, pods)
	jobs := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				pod := onePod(first + i)
				began := time.Now()
				rv, err := replicas[i%len(replicas)].Review(context.Background(), pod, evaluator.Request{Operation: "CREATE", UID: fmt.Sprintf("req-%d", first+i)})
				latencies[i] = time.Since(began)
				if err != nil || !rv.Decision.Allowed {
					tb.Errorf("pod %d: allowed=%v err=%v", first+i, rv.Decision.Allowed, err)
					continue
				}
				if !rv.Decision.Directives.Preemptible {
					nonPreemptible.Add(1)
				}
			}
		}()
	}
	for i := range pods {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	out := burstResult{elapsed: time.Since(start), nonPreemptible: int(nonPreemptible.Load())}
	sort.Slice(latencies, func(a, b int) bool { return latencies[a] < latencies[b] })
	out.p50, out.p99 = latencies[pods/2], latencies[pods*99/100]
	return out
}

// ledgerCounts reads the shared ledger's metrics: commits, conflicts and
// the decisions their writes carried.
func ledgerCounts(tb testing.TB) (commits, conflicts, decisions float64) {
	tb.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "mandate_quota_ledger_commits_total":
				for _, l := range m.GetLabel() {
					if l.GetName() == "result" && l.GetValue() == "committed" {
						commits += m.GetCounter().GetValue()
					}
					if l.GetName() == "result" && l.GetValue() == "conflict" {
						conflicts += m.GetCounter().GetValue()
					}
				}
			case "mandate_quota_ledger_batch_decisions":
				decisions += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return commits, conflicts, decisions
}

// onePod is the i-th one-GPU build pod of tenant product: named when i is
// even, with only a generateName when odd.
func onePod(i int) *unstructured.Unstructured {
	meta := map[string]any{"namespace": "product"}
	if i%2 == 0 {
		meta["name"] = fmt.Sprintf("p-%d", i)
	} else {
		meta["generateName"] = "web-"
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": meta,
		"spec": map[string]any{
			"priorityClassName": "build",
			"containers": []any{map[string]any{"name": "c", "image": "x",
				"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": "1"}}}},
		},
	}}
}

// TestSharedLedgerGangClaimsAcrossReplicas: three replicas sharing their
// reservations lend an admitted Job's directives to no more pods than the
// Job was admitted for, together: of 30 pods naming the 2-pod Job as their
// controller, claimed concurrently through all three, exactly 2 are
// admitted on the Job's directives and the rest are left to be decided on
// their own; a replica started afterwards finds both slots taken.
func TestSharedLedgerGangClaimsAcrossReplicas(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	env := envtest.Start(t)
	replicas := ledgerReplicas(t, env, 3, true)
	for _, r := range replicas {
		r.Owners = env.Client
	}
	ctx := context.Background()
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "train", "namespace": "product"},
		"spec": map[string]any{"parallelism": int64(2), "completions": int64(2), "template": map[string]any{"spec": map[string]any{
			"restartPolicy": "Never", "priorityClassName": "build",
			"containers": []any{map[string]any{"name": "c", "image": "x",
				"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": "1"}}}},
		}}},
	}}
	admitted, err := replicas[0].Review(ctx, job, evaluator.Request{Operation: "CREATE", UID: "job"})
	if err != nil || !admitted.Decision.Allowed {
		t.Fatalf("the Job: allowed=%v err=%v", admitted.Decision.Allowed, err)
	}
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "product"}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, admitted.Mutated); err != nil {
		t.Fatal(err)
	}
	claimer := func(i int) *unstructured.Unstructured {
		pod := onePod(2 * i)
		pod.SetName(fmt.Sprintf("claimer-%d", i))
		pod.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train",
			UID: admitted.Mutated.GetUID(), Controller: ptr.To(true)}})
		return pod
	}
	const claimers = 30
	var onDirectives atomic.Int32
	var wg sync.WaitGroup
	for i := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := replicas[i%len(replicas)].GangDirectives(ctx, claimer(i), evaluator.Request{Operation: "CREATE", UID: fmt.Sprintf("claim-%d", i)})
			if err != nil {
				t.Errorf("claimer %d: %v", i, err)
			}
			if ok {
				onDirectives.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := onDirectives.Load(); got != 2 {
		t.Errorf("%d of %d pods naming the 2-pod Job were admitted on its directives across 3 replicas, want exactly 2", got, claimers)
	}
	restarted := ledgerReplicas(t, env, 1, true)[0]
	restarted.Owners = env.Client
	if _, ok, err := restarted.GangDirectives(ctx, claimer(claimers), evaluator.Request{Operation: "CREATE", UID: "after-restart"}); err != nil || ok {
		t.Errorf("a replica started afterwards lent the Job's directives to one more pod (ok=%v, err=%v): it did not find the claims", ok, err)
	}
}
