package replay

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/simulate/openb"
	"github.com/mandate-dev/mandate/topology/topologytest"
)

const openbDir = "../testdata/alibaba-gpu-v2023/"

// BenchmarkOpenbDecisionPath replays the openb default pod list (8,152
// pods over about 160 days) on its 1,213 nodes under the default model,
// every pod decided by the decision service with its mapped tenant and
// class (`make bench-simulate`; target ≤ 60 s): wall seconds and simulated
// seconds per wall second.
func BenchmarkOpenbDecisionPath(b *testing.B) {
	rows, err := openb.ReadNodesFile(openbDir + "openb_node_list_gpu_node.csv")
	if err != nil {
		b.Fatal(err)
	}
	pods, err := openb.ReadPodsFile(openbDir + "openb_pod_list_default.csv")
	if err != nil {
		b.Fatal(err)
	}
	ev := embedded(b)
	jobs, err := FromOpenb(pods, ev.Model())
	if err != nil {
		b.Fatal(err)
	}
	benchRun(b, "openb default on 1,213 nodes", jobs, FromOpenbNodes(rows), Options{Decider: ev, Model: ev.Model(), Placement: "best-fit"})
}

// BenchmarkSyntheticReference replays a synthetic trace of
// MANDATE_SIMULATE_JOBS workloads (default 100,000) on the empty
// 12,500-node reference topology (100,000 GPUs) under the reference
// organisation of 1,000 tenants (`make bench-simulate`; target ≤ 10 min,
// RSS ≤ 2 GiB): wall seconds, simulated seconds per wall second, peak RSS.
// Run it once: the machine is shared.
func BenchmarkSyntheticReference(b *testing.B) {
	n := 100000
	if v := os.Getenv("MANDATE_SIMULATE_JOBS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatalf("MANDATE_SIMULATE_JOBS: %v", err)
		}
	}
	supply := Reference(topologytest.DefaultNodeCount)
	policy, err := evaluator.LoadFS(policies.FS, "bench")
	if err != nil {
		b.Fatal(err)
	}
	policy.Data["mandate"].(map[string]any)["model"].(map[string]any)["tenants"] = topologytest.ReferenceTenants(len(supply.Namespaces))
	ev, err := evaluator.New(context.Background(), policy, evaluator.Options{Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	tenants := make([]string, len(supply.Namespaces))
	for i, ns := range supply.Namespaces {
		tenants[i] = ns.Name
	}
	benchRun(b, fmt.Sprintf("synthetic %d workloads on %d nodes", n, len(supply.Nodes)), Synthetic(n, tenants, 42), supply,
		Options{Decider: ev, Model: ev.Model(), Placement: "best-fit"})
}

// Synthetic is n workloads over tenants, offering about 70% of the
// reference cluster's 100,000 GPUs: one a 0.7 s on average, running 10 to
// 110 minutes; 50% one pod of 1 to 8 GPUs, 30% one 8-GPU pod, 15% four
// (a clique's), 5% sixteen (a block's); 80% train, 10% each
// build-preemptible and build.
func Synthetic(n int, tenants []string, seed uint64) []Job {
	rng := rand.New(rand.NewPCG(seed, 1))
	jobs := make([]Job, n)
	t := 0.0
	for i := range jobs {
		t += rng.ExpFloat64() * 0.7
		j := Job{Name: fmt.Sprintf("w-%06d", i), Submit: t, Duration: 600 + rng.Float64()*6000,
			Namespace: tenants[rng.IntN(len(tenants))], Pods: 1, GPUsPerPod: 8, PriorityClass: "train"}
		switch p := rng.Float64(); {
		case p < 0.5:
			j.GPUsPerPod = 1 + rng.IntN(8)
		case p < 0.8:
		case p < 0.95:
			j.Pods = 4
		default:
			j.Pods = 16
		}
		switch p := rng.Float64(); {
		case p < 0.1:
			j.PriorityClass = "build-preemptible"
		case p < 0.2:
			j.PriorityClass = "build"
		}
		jobs[i] = j
	}
	return jobs
}

func benchRun(b *testing.B, what string, jobs []Job, supply Supply, o Options) {
	b.ReportAllocs()
	var r *Report
	start := time.Now()
	ctx := ctrl.LoggerInto(context.Background(), logr.Discard())
	for b.Loop() {
		var err error
		if r, err = Run(ctx, jobs, supply, o); err != nil {
			b.Fatal(err)
		}
	}
	wall := time.Since(start).Seconds() / float64(b.N)
	b.ReportMetric(wall, "s/run")
	b.ReportMetric(r.End/wall, "simulated-s/wall-s")
	rss := peakRSS()
	b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
	var admitted, denied, done int
	for _, t := range r.Tenants {
		admitted, denied, done = admitted+t.Admitted, denied+t.Denied, done+t.Completed
	}
	b.Logf("%s: %.1f s wall for %.1f simulated days (%.0f simulated seconds a wall second); %d jobs: %d admitted, %d denied, %d completed; mean allocation %.1f%%; peak RSS %d MiB",
		what, wall, r.End/86400, r.End/wall, r.Jobs, admitted, denied, done, r.Cluster.MeanAllocation, rss>>20)
}

// peakRSS is the process's peak resident set (VmHWM), 0 where unknown.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
