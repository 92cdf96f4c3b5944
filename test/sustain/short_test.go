package sustain

import (
	"os"
	"testing"
	"time"

	"github.com/mandate-dev/mandate/test/envtest"
)

// TestSustainShort is the benchmark's harness for 20 seconds at a few
// workers, in every `go test ./...`: errors, over-admission and a growing
// ledger fail it as they fail the benchmark. Its webhooks wait longer than
// the chart's default (scaled by MANDATE_TEST_TIMEOUT_SCALE), since it
// runs beside other tests; the benchmark keeps the default.
func TestSustainShort(t *testing.T) {
	res := sustain(t, runConfig{
		duration:       20 * time.Second,
		workers:        4,
		apiServers:     2,
		tenants:        4,
		guaranteed:     8,
		life:           time.Second,
		sample:         2 * time.Second,
		webhookTimeout: envtest.Timeout(10 * time.Second),
	})
	res.check(t, res.report(os.Stdout))
}
