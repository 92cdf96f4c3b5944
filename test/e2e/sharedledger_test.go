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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	ev := reviewtest.DefaultEvaluator(t)
	const window = 10 * time.Minute
	replica := func() *review.Service {
		st, err := cluster.New(ev.Model())
		if err != nil {
			t.Fatal(err)
		}
		if err := st.LoadFile("../../examples/cluster.yaml"); err != nil {
			t.Fatal(err)
		}
		if err := cluster.CheckSharedLedger(env.Client.RESTMapper()); err != nil {
			t.Fatal(err)
		}
		c, err := client.New(env.Config, client.Options{Mapper: env.Client.RESTMapper()})
		if err != nil {
			t.Fatal(err)
		}
		st.SetConfirmationWindow(window)
		st.ShareReservations(c)
		return &review.Service{Decider: ev, State: st}
	}
	var replicas []*review.Service
	for range n {
		replicas = append(replicas, replica())
	}

	const pods, workers = 1000, 48
	var nonPreemptible, preemptible atomic.Int32
	latencies := make([]time.Duration, pods)
	jobs := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				pod := onePod(i)
				began := time.Now()
				rv, err := replicas[i%len(replicas)].Review(context.Background(), pod, evaluator.Request{Operation: "CREATE", UID: fmt.Sprintf("req-%d", i)})
				latencies[i] = time.Since(began)
				if err != nil || !rv.Decision.Allowed {
					t.Errorf("pod %d: allowed=%v err=%v", i, rv.Decision.Allowed, err)
					continue
				}
				if rv.Decision.Directives.Preemptible {
					preemptible.Add(1)
				} else {
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
	elapsed := time.Since(start)
	sort.Slice(latencies, func(a, b int) bool { return latencies[a] < latencies[b] })
	t.Logf("%d decisions over %d replicas sharing one TenantLedger in %s (%.0f/s): p50 %s, p99 %s; %d non-preemptible, %d preemptible",
		pods, len(replicas), elapsed.Round(time.Millisecond), float64(pods)/elapsed.Seconds(),
		latencies[pods/2].Round(10*time.Microsecond), latencies[pods*99/100].Round(10*time.Microsecond), nonPreemptible.Load(), preemptible.Load())
	if nonPreemptible.Load() != productGuaranteeLeft {
		t.Fatalf("%d pods run non-preemptible across the replicas, want exactly product's remaining guarantee of %d", nonPreemptible.Load(), productGuaranteeLeft)
	}

	restarted := replica()
	rv, err := restarted.Review(context.Background(), onePod(pods), evaluator.Request{Operation: "CREATE", UID: "after-restart"})
	if err != nil || !rv.Decision.Allowed {
		t.Fatalf("after a restart: allowed=%v err=%v", rv.Decision.Allowed, err)
	}
	if !rv.Decision.Directives.Preemptible {
		t.Errorf("a replica started after the burst turned its first pod non-preemptible: it did not find the reservations in the TenantLedger")
	}

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
