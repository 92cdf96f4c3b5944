//go:build benchsustain

package sustain

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// TestBenchSustain is `make bench-sustain`. Knobs (environment):
// BENCH_SUSTAIN_DURATION (5m), BENCH_SUSTAIN_WORKERS (16),
// BENCH_SUSTAIN_API_SERVERS (2), BENCH_SUSTAIN_TENANTS (8),
// BENCH_SUSTAIN_GPUS (32: each tenant's guarantee and ceiling),
// BENCH_SUSTAIN_LIFE (2s), BENCH_SUSTAIN_SAMPLE (10s).
func TestBenchSustain(t *testing.T) {
	cfg := runConfig{
		duration:   envDuration(t, "BENCH_SUSTAIN_DURATION", 5*time.Minute),
		workers:    envInt(t, "BENCH_SUSTAIN_WORKERS", 16),
		apiServers: envInt(t, "BENCH_SUSTAIN_API_SERVERS", 2),
		tenants:    envInt(t, "BENCH_SUSTAIN_TENANTS", 8),
		guaranteed: envInt(t, "BENCH_SUSTAIN_GPUS", 32),
		life:       envDuration(t, "BENCH_SUSTAIN_LIFE", 2*time.Second),
		sample:     envDuration(t, "BENCH_SUSTAIN_SAMPLE", 10*time.Second),
	}
	res := sustain(t, cfg)
	res.check(t, res.report(os.Stdout))
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration", name, v)
	}
	return d
}
