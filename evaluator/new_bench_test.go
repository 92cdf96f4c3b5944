package evaluator_test

import (
	"context"
	"testing"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/policies"
)

func BenchmarkNew(b *testing.B) {
	p, err := evaluator.LoadFS(policies.FS, "embedded")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := evaluator.New(context.Background(), p, evaluator.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
