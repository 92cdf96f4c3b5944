package app

import "runtime"

// Sampling of the lock profiles served beside the CPU and heap profiles
// when pprofAddr is set: one mutex contention event in mutexProfileFraction,
// and a blocking event about every blockProfileRate nanoseconds blocked. A
// 2-core machine hides contention a CPU profile cannot show; these show
// where requests wait (a lock held across a decision, a channel).
const (
	mutexProfileFraction = 10
	blockProfileRate     = 10_000
)

// enableLockProfiles turns on the mutex and block profiles
// (/debug/pprof/mutex, /debug/pprof/block) when profiles are served at all
// (addr not "0"); they cost nothing otherwise.
func enableLockProfiles(addr string) {
	if addr == "" || addr == "0" {
		return
	}
	runtime.SetMutexProfileFraction(mutexProfileFraction)
	runtime.SetBlockProfileRate(blockProfileRate)
}
