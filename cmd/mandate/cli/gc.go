package cli

import (
	"math"
	"runtime/debug"
)

// applyGCPercent sets Go's garbage-collection target to percent when a
// memory limit (GOMEMLIMIT) bounds the heap and GOGC does not set the
// target already (why: config.DefaultGCPercent). Without a limit Go's own
// target is kept. It returns the target in force and why.
func applyGCPercent(percent int, getenv func(string) string) (int, string) {
	if getenv("GOGC") != "" {
		return currentGCPercent(), "GOGC is set"
	}
	if debug.SetMemoryLimit(-1) == math.MaxInt64 {
		return currentGCPercent(), "no memory limit (GOMEMLIMIT): Go's default kept"
	}
	debug.SetGCPercent(percent)
	return percent, "gcPercent, with a memory limit (GOMEMLIMIT) bounding the heap"
}

// currentGCPercent reads the target without changing it.
func currentGCPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}
