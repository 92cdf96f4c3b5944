package review_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/test/reviewtest"
)

// BenchmarkReviewParallel: admissions (not dry runs: each reserves its
// GPUs) of the four fixture tenants, 16 in flight at once on GOMAXPROCS 2, with every
// tenant under one root (the default model: one tenant tree, one commit
// lock) and with each tenant a root of its own. Deciding outside the tree
// lock makes the two alike. Each goroutine cycles through a few workload
// names, so the ledger holds a bounded number of reservations.
func BenchmarkReviewParallel(b *testing.B) {
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
	}{
		{name: "one-root"},
		{name: "root-each", edit: func(m map[string]any) {
			for _, t := range m["tenants"].(map[string]any) {
				delete(t.(map[string]any), "parent")
			}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
			s := parallelService(b, tc.edit)
			namespaces := []string{"platform", "product", "vision", "llm"}
			var goroutines, allowed, reviews atomic.Int64
			redecided := func() float64 {
				return reviewtest.Counter(b, "mandate_quota_redecisions_total", map[string]string{"where": "outside"}) +
					reviewtest.Counter(b, "mandate_quota_redecisions_total", map[string]string{"where": "locked"})
			}
			before := redecided()
			// As a webhook under load: many admissions in flight at once.
			b.SetParallelism(8)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				g := goroutines.Add(1)
				objs := make([]*unstructured.Unstructured, 16)
				for i := range objs {
					objs[i] = benchJob(fmt.Sprintf("job-%d-%d", g, i), namespaces[(int(g)+i)%len(namespaces)])
				}
				for i := 0; pb.Next(); i++ {
					obj := objs[i%len(objs)]
					rv, err := s.Review(context.Background(), obj, evaluator.Request{Operation: "CREATE", UID: fmt.Sprintf("uid-%d-%d", g, i%len(objs))})
					if err != nil {
						b.Error(err)
						return
					}
					reviews.Add(1)
					if rv.Decision.Allowed {
						allowed.Add(1)
					}
				}
			})
			if reviews.Load() > 0 {
				b.ReportMetric(float64(allowed.Load())/float64(reviews.Load()), "allowed/op")
				b.ReportMetric((redecided()-before)/float64(reviews.Load()), "redecisions/op")
			}
		})
	}
}

// parallelService is reviewtest.Service's cluster (8 GPU nodes, the
// tenant namespaces) deciding with the default policies as edit changes
// their model.
func parallelService(b *testing.B, edit func(map[string]any)) *review.Service {
	b.Helper()
	// A busy machine makes the numbers slower, never fails the run on the
	// evaluation deadline.
	p, err := evaluator.LoadFS(policies.FS, "bench")
	if err != nil {
		b.Fatal(err)
	}
	if edit != nil {
		edit(p.Data["mandate"].(map[string]any)["model"].(map[string]any))
	}
	ev, err := evaluator.New(context.Background(), p, evaluator.Options{Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	st, err := cluster.New(ev.Model())
	if err != nil {
		b.Fatal(err)
	}
	for i := range 8 {
		st.UpsertNode(fixtures.GPUNode(i))
	}
	for ns, tenant := range fixtures.Tenants() {
		st.UpsertNamespace(fixtures.TenantNamespace(ns, tenant))
	}
	return &review.Service{Decider: ev, State: st}
}

// benchJob is a 2 × 1-GPU Job in namespace.
func benchJob(name, namespace string) *unstructured.Unstructured {
	job := map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{
			"parallelism": int64(2), "completions": int64(2),
			"template": map[string]any{"spec": map[string]any{
				"restartPolicy": "Never",
				"containers": []any{map[string]any{"name": "c", "image": "x",
					"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": "1"}}}},
			}},
		},
	}
	return &unstructured.Unstructured{Object: job}
}
