package cli

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestApplyGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	env := func(gogc string) func(string) string {
		return func(k string) string {
			if k == "GOGC" {
				return gogc
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name    string
		limit   int64
		gogc    string
		want    int
		wantWhy string
	}{
		{"no memory limit keeps Go's", math.MaxInt64, "", 100, "no memory limit (GOMEMLIMIT): Go's default kept"},
		{"a memory limit takes gcPercent", 1 << 30, "", 400, "gcPercent, with a memory limit (GOMEMLIMIT) bounding the heap"},
		{"GOGC wins", 1 << 30, "150", 150, "GOGC is set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			if tc.gogc != "" {
				debug.SetGCPercent(150) // as the runtime read GOGC=150 at start
			}
			debug.SetMemoryLimit(tc.limit)
			got, why := applyGCPercent(400, env(tc.gogc))
			if got != tc.want || why != tc.wantWhy {
				t.Errorf("applyGCPercent = %d, %q; want %d, %q", got, why, tc.want, tc.wantWhy)
			}
			if p := currentGCPercent(); p != tc.want {
				t.Errorf("GC percent in force is %d, want %d", p, tc.want)
			}
		})
	}
}
