package fgd

import (
	"context"
	"testing"
	"time"
)

// BenchmarkFGDProtocol runs the whole protocol of the paper (seeds 42–51,
// arrivals to 130% of the 6,212 GPUs of the 1,213 openb nodes, about
// 10,800 placements a seed) one seed at a time, per policy and pod list,
// and reports the wall time per seed and the placements decided per wall
// second; it logs the allocation at 100% and 130% beside the paper's
// Best-fit (`make bench-simulate`).
func BenchmarkFGDProtocol(b *testing.B) {
	for _, list := range []string{"openb_pod_list_default.csv", "openb_pod_list_gpuspec33.csv"} {
		nodes, tasks := openbTrace(b, list)
		for _, policy := range []string{"best-fit", "random"} {
			b.Run(list+"/"+policy, func(b *testing.B) {
				b.ReportAllocs()
				var res *Result
				start := time.Now()
				for b.Loop() {
					var err error
					res, err = Run(context.Background(), nodes, tasks, Options{Policy: policy, Seeds: paperSeeds, Inflate: DefaultInflate, Parallel: 1})
					if err != nil {
						b.Fatal(err)
					}
				}
				wall := time.Since(start).Seconds()
				runs := float64(b.N * len(paperSeeds))
				placements := float64(b.N*res.Tasks.Arrived) / wall
				b.ReportMetric(wall/runs, "s/seed")
				b.ReportMetric(placements, "placements/s")
				b.ReportMetric(float64(res.Tasks.Arrived)/float64(len(paperSeeds)), "placements/seed")
				b.Logf("%s %s: %.2f s a seed for %d placements on %d nodes (%.0f placements a wall second); allocated %.2f%% at 100%% arrived, %.2f%% at 130%% (the paper's Best-fit on the default list: 92.9%%, 93.1%%)",
					list, policy, wall/runs, res.Tasks.Arrived/len(paperSeeds), res.Nodes, placements,
					res.Points[100].Allocated.Mean, res.Points[130].Allocated.Mean)
			})
		}
	}
}
