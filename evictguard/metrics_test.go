package evictguard_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mandate-dev/mandate/evictguard"
)

// TestMetricsLint: the guard's metrics pass promlint, and every action has
// its series from the start (rate() sees the first refusal).
func TestMetricsLint(t *testing.T) {
	for _, c := range evictguard.Collectors {
		problems, err := testutil.CollectAndLint(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
		if n := testutil.CollectAndCount(c); n != len(evictguard.Actions) {
			t.Errorf("%d series, want one per action (%d)", n, len(evictguard.Actions))
		}
	}
}
