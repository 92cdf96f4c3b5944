package envtest

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// TimeoutScaleEnv multiplies every deadline of the test harness — the API
// server's start, the CRD install, the waits for serve and for the cluster
// state — by its value (default 1). Set it above 1 on a slow or busy
// machine: the deadlines bound how long a broken run hangs, they are not
// what a test asserts.
const TimeoutScaleEnv = "MANDATE_TEST_TIMEOUT_SCALE"

// Timeout is d scaled by $MANDATE_TEST_TIMEOUT_SCALE.
func Timeout(d time.Duration) time.Duration {
	scale, err := strconv.ParseFloat(os.Getenv(TimeoutScaleEnv), 64)
	if err != nil || scale <= 0 {
		return d
	}
	return time.Duration(float64(d) * scale)
}

// WaitFor polls cond until it holds, failing t after Timeout(d) with what
// it was waiting for.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	timeout := Timeout(d)
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s (raise %s on a slow machine)", timeout, what, TimeoutScaleEnv)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
