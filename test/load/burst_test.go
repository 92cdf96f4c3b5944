//go:build load

package load

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/workload"
)

const podsPerTenant = 100

// createPods creates the pod of every index jobs yields, with workers in
// parallel, until jobs is closed, and reports each create to done (from
// the workers, concurrently) with when it began and ended.
func (h *harness) createPods(workers int, jobs <-chan int, pod func(i int) *corev1.Pod, done func(pod *corev1.Pod, start, end time.Time, err error)) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := h.clientOf(w)
			for i := range jobs {
				p := pod(i)
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(10*time.Second))
				err := c.Create(ctx, p)
				cancel()
				done(p, start, time.Now(), err)
			}
		}()
	}
	wg.Wait()
}

// clientOf is the client worker w creates through: with several API
// servers (harness.apiServers), the workers take turns.
func (h *harness) clientOf(w int) client.Client {
	if len(h.apiServers) == 0 {
		return h.env.Client
	}
	return h.apiServers[w%len(h.apiServers)]
}

// burst creates podsPerTenant one-GPU build pods in every tenant's namespace
// with workers in parallel, interleaving tenants, half of them named and
// half with only a generateName; during(i) runs before the i-th create. It returns each create's latency and how many failed.
func (h *harness) burst(prefix string, workers int, during func(i int)) ([]time.Duration, int) {
	jobs := make(chan int)
	go func() {
		defer close(jobs)
		for i := range tenants * podsPerTenant {
			if during != nil {
				during(i)
			}
			jobs <- i
		}
	}()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failed    int
	)
	h.createPods(workers, jobs, func(i int) *corev1.Pod {
		pod := gpuPod(fmt.Sprintf("team-%d", i%tenants), fmt.Sprintf("%s-%04d", prefix, i), "build")
		if i%2 == 1 {
			// Half the pods have only a generateName, as every
			// Deployment's, ReplicaSet's and Job's have.
			pod.GenerateName, pod.Name = pod.Name+"-", ""
		}
		return pod
	}, func(_ *corev1.Pod, start, end time.Time, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if failed == 0 {
				fmt.Printf("burst: first failed create: %v\n", err)
			}
			failed++
			return
		}
		latencies = append(latencies, end.Sub(start))
	})
	return latencies, failed
}

// podsOf lists the stored pods of one burst by tenant and preemptibility.
func (h *harness) podsOf(t *testing.T, prefix string) (perTenant map[string][2]int, unmarked []string) {
	perTenant = map[string][2]int{}
	for i := range tenants {
		ns := fmt.Sprintf("team-%d", i)
		var pods corev1.PodList
		require.NoError(t, h.env.Client.List(context.Background(), &pods, client.InNamespace(ns)))
		for _, p := range pods.Items {
			if len(p.Name) < len(prefix) || p.Name[:len(prefix)] != prefix {
				continue
			}
			_, decided := p.Annotations[scheduler.AnnotationDirectives]
			switch {
			case !decided:
				unmarked = append(unmarked, ns+"/"+p.Name)
			case p.Labels[workload.LabelPreemptible] == "false":
				c := perTenant[ns]
				c[0]++
				perTenant[ns] = c
			default:
				c := perTenant[ns]
				c[1]++
				perTenant[ns] = c
			}
		}
	}
	return perTenant, unmarked
}

// TestBurst: 1,000 pod creates across 10 tenants through the real API
// server, with each replica's own ledger and with the shared one
// (--shared-quota, the chart's default). Each tenant has 50 guaranteed GPUs
// for non-preemptible work, so exactly 50 of its 100 one-GPU build pods
// must stay non-preemptible and 50 be turned preemptible: quota counted
// once per pod, however fast they come.
func TestBurst(t *testing.T) {
	for _, mode := range []struct {
		name string
		args []string
	}{{"memory", nil}, {"shared", []string{"--shared-quota"}}} {
		t.Run(mode.name, func(t *testing.T) {
			h := start(t, func(o *startOptions) { o.extraArgs = mode.args })
			began := time.Now()
			latencies, failed := h.burst("burst", 8, nil)
			elapsed := time.Since(began)
			require.Zero(t, failed, "no create may fail")
			require.Len(t, latencies, tenants*podsPerTenant)

			perTenant, unmarked := h.podsOf(t, "burst")
			require.Empty(t, unmarked, "every stored pod was decided by Mandate")
			for i := range tenants {
				ns := fmt.Sprintf("team-%d", i)
				require.Equal(t, [2]int{guaranteed, podsPerTenant - guaranteed}, perTenant[ns],
					"%s: [non-preemptible, preemptible] pods", ns)
			}
			p50, p99, n, err := h.latencyPercentiles()
			require.NoError(t, err)
			require.GreaterOrEqual(t, n, tenants*podsPerTenant)
			fmt.Printf("burst (%s ledger): %d pod creates across %d tenants in %s (%.0f/s), 8 clients\n",
				mode.name, len(latencies), tenants, elapsed.Round(time.Millisecond), float64(len(latencies))/elapsed.Seconds())
			fmt.Printf("webhook latency histogram (%s ledger, /mutate, %d admissions): p50 %s, p99 %s\n", mode.name, n, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond))
			fmt.Printf("client create latency (%s ledger, through the API server): p50 %s, p99 %s\n", mode.name,
				percentile(latencies, 0.5).Round(10*time.Microsecond), percentile(latencies, 0.99).Round(10*time.Microsecond))
		})
	}
}

// TestRestartDuringBurst: mandate serve is killed a third of the way into a
// burst and restarted. With failurePolicy Fail, creates fail while it is
// down, and every pod that was stored carries Mandate's decision: nothing
// was admitted unevaluated. The server is ready again within seconds.
func TestRestartDuringBurst(t *testing.T) {
	h := start(t)
	var downFailures atomic.Int32
	var ready time.Duration
	restarted := make(chan struct{})
	latencies, failed := h.burst("restart", 4, func(i int) {
		if i != tenants*podsPerTenant/3 {
			return
		}
		h.kill()
		go func() {
			defer close(restarted)
			// While it is down, creates must fail rather than slip through.
			for j := range 5 {
				if err := h.create(context.Background(), gpuPod("team-1", fmt.Sprintf("restart-down-%d", j), "build"), false); err != nil {
					downFailures.Add(1)
				}
			}
			h.startServe()
			ready = h.waitReady(30 * time.Second)
		}()
		<-restarted
	})
	require.EqualValues(t, 5, downFailures.Load(), "every create while mandate serve was down failed")
	perTenant, unmarked := h.podsOf(t, "restart")
	require.Empty(t, unmarked, "no pod was admitted without a decision")
	stored := 0
	for _, c := range perTenant {
		stored += c[0] + c[1]
	}
	require.Equal(t, len(latencies), stored, "every successful create is stored and decided")
	require.Less(t, ready, envtest.Timeout(10*time.Second), "ready again within seconds")
	fmt.Printf("restart: killed after %d creates; %d creates failed while down (failurePolicy Fail), %d failed around the kill; ready again %s after restart; %d stored, all decided\n",
		tenants*podsPerTenant/3, downFailures.Load(), failed, ready.Round(10*time.Millisecond), stored)
}
