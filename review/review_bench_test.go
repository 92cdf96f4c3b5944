package review_test

import (
	"context"
	"testing"

	"github.com/mandate-dev/mandate/evaluator"
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
			r.Decider = reviewtest.DefaultEvaluator(b)
			if shadow {
				r.Shadow = func() review.Decider { return reviewtest.DefaultEvaluator(b) }
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
