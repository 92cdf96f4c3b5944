package webhook

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/test/fixtures"
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
			r, _ := newTestReviewer(b)
			r.Decider = testEvaluator(b)
			if shadow {
				r.Shadow = func() Decider { return testEvaluator(b) }
			}
			obj := benchObject(b)
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

func benchObject(b *testing.B) *unstructured.Unstructured {
	b.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(fixtures.VisionSweep), &obj.Object); err != nil {
		b.Fatal(err)
	}
	return obj
}
