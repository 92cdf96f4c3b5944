package main

import (
	"fmt"
	"io"

	mandateconfig "github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/test/envtest"
)

// ledgerReading is the shared ledger read right after a cell (outside
// the measured time, so the reading costs no system anything).
type ledgerReading struct {
	after *cell
	size  envtest.LedgerSize
}

// printLedger writes the readings and their peak. Every admitted review of
// a system with the shared ledger reserves its GPUs under a name no other
// review carries, and no object is ever stored for it, so the reservation
// stays until the confirmation window ends: the ledger holds about the
// admitted reviews of the last window, whichever shared system sent them.
func printLedger(w io.Writer, readings []ledgerReading) {
	if len(readings) == 0 {
		return
	}
	fmt.Fprintf(w, "Shared quota ledger (every TenantLedger, read after each cell; confirmation window %s, reviews never followed by a stored object):\n",
		mandateconfig.DefaultConfirmationWindow)
	peak := readings[0]
	for _, r := range readings {
		fmt.Fprintf(w, "  after round %d c=%d %-20s %3d objects %8.1f KiB %7d reservations\n",
			r.after.round, r.after.concurrency, r.after.system, r.size.Objects, float64(r.size.Bytes)/1024, r.size.Entries)
		if r.size.Bytes > peak.size.Bytes {
			peak = r
		}
	}
	fmt.Fprintf(w, "ledger peak: %.1f KiB in %d objects, %d reservations (after round %d c=%d %s)\n",
		float64(peak.size.Bytes)/1024, peak.size.Objects, peak.size.Entries, peak.after.round, peak.after.concurrency, peak.after.system)
}
