package review_test

import (
	"context"
	"testing"
	"time"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/test/reviewtest"
)

// BenchmarkReview: one dry-run review of a Volcano sweep, without and with
// a shadow revision (the same evaluator, so they agree). Without a shadow
// the cost must stay what it was before shadows existed.
func BenchmarkReview(b *testing.B) {
	for _, shadow := range []bool{false, true} {
		name := "no-shadow"
		if shadow {
			name = "shadow"
		}
		b.Run(name, func(b *testing.B) {
			r, _ := reviewtest.Service(b)
			ev := benchEvaluator(b)
			r.Decider = ev
			if shadow {
				r.Shadow = func() review.Decider { return ev }
			}
			obj := reviewtest.Object(b, fixtures.VisionSweep)
			req := evaluator.Request{Operation: "CREATE", DryRun: true}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Review(context.Background(), obj, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchEvaluator is the embedded default policies without the production
// evaluation deadline: a busy machine makes a benchmark slower, it must not
// make it fail.
func benchEvaluator(b *testing.B) *evaluator.Evaluator {
	b.Helper()
	p, err := evaluator.LoadFS(policies.FS, "embedded")
	if err != nil {
		b.Fatal(err)
	}
	ev, err := evaluator.New(context.Background(), p, evaluator.Options{Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	return ev
}
