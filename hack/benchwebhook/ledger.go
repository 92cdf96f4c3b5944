package main

import (
	"fmt"
	"io"
	"time"

	mandateconfig "github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/test/envtest"
)

// ledgerReading is the shared ledger read right after a cell (outside
// the measured time, so the reading costs no system anything).
type ledgerReading struct {
	after *cell
	// idle, without after, is how long after the last cell the reading
	// was taken, with no load (BENCH_LEDGER_DRAIN).
	idle time.Duration
	size envtest.LedgerSize
}

func (r ledgerReading) String() string {
	if r.after == nil {
		return fmt.Sprintf("%s after the last cell, no load", r.idle)
	}
	return fmt.Sprintf("after round %d c=%d %s", r.after.round, r.after.concurrency, r.after.system)
}

// printLedger writes the readings and their peak. Every admitted review of
// a system with the shared ledger reserves its GPUs under a name no other
// review carries, and no object is ever stored for it, so the reservation
// stays until a replica has found the object missing (cluster's
// ReleaseUnstored) or the confirmation window ends: the ledger holds the
// admitted reviews not yet found unstored, whichever shared system sent
// them.
func printLedger(w io.Writer, readings []ledgerReading) {
	if len(readings) == 0 {
		return
	}
	fmt.Fprintf(w, "Shared quota ledger (every TenantLedger, read after each cell; confirmation window %s, reviews never followed by a stored object):\n",
		mandateconfig.DefaultConfirmationWindow)
	peak := readings[0]
	for _, r := range readings {
		fmt.Fprintf(w, "  %-45s %3d objects %8.1f KiB %7d reservations\n",
			r, r.size.Objects, float64(r.size.Bytes)/1024, r.size.Entries)
		if r.size.Bytes > peak.size.Bytes {
			peak = r
		}
	}
	fmt.Fprintf(w, "ledger peak: %.1f KiB in %d objects, %d reservations (%s)\n",
		float64(peak.size.Bytes)/1024, peak.size.Objects, peak.size.Entries, peak)
}
