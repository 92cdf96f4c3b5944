package sustain

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// flatness judges the ledger's size series: the largest size (bytes) of
// the last window against the largest of the second (the first holds the
// start), window a minute, or a quarter of a run shorter than three.
type flatness struct {
	window             time.Duration
	second, last       int // largest bytes in each window
	secondSeen, lastOK bool
	flat               bool
}

func judgeFlatness(readings []reading, elapsed time.Duration) flatness {
	f := flatness{window: time.Minute}
	if elapsed < 3*f.window {
		f.window = (elapsed / 4).Round(time.Second)
	}
	for _, r := range readings {
		switch {
		case r.at >= f.window && r.at < 2*f.window:
			f.second, f.secondSeen = max(f.second, r.ledger.Bytes), true
		case r.at >= elapsed-f.window:
			f.last, f.lastOK = max(f.last, r.ledger.Bytes), true
		}
	}
	f.flat = f.secondSeen && f.lastOK && (float64(f.last) <= flatFactor*float64(f.second) || f.last <= flatFloor)
	return f
}

func (f flatness) String() string {
	verdict := "flat"
	if !f.flat {
		verdict = "NOT flat"
	}
	if !f.secondSeen || !f.lastOK {
		return fmt.Sprintf("ledger flatness: no reading in the second or the last %s window: NOT judged", f.window)
	}
	return fmt.Sprintf("ledger flatness: largest of the last %s %.1f KiB <= %.1f × largest of the second %s %.1f KiB (or <= %d KiB): %s",
		f.window, kib(f.last), flatFactor, f.window, kib(f.second), flatFloor>>10, verdict)
}

func kib(b int) float64 { return float64(b) / 1024 }

// report writes the run's numbers: totals, the readings' series and the
// flatness verdict.
func (r result) report(w io.Writer) flatness {
	c := r.cfg
	secs := r.elapsed.Seconds()
	fmt.Fprintf(w, "sustain: 2 replicas (--shared-quota) behind one address, %d API server(s), %d workers, %d tenants × %d GPUs guaranteed = ceiling, pods of 1/2/4 GPUs living %s, %s\n",
		c.apiServers, c.workers, c.tenants, c.guaranteed, c.life, r.elapsed.Round(time.Second))
	fmt.Fprintf(w, "sustain: %d creates (%.1f/s): %d admitted (%.1f/s), %d denied for the guarantee, %d denied otherwise, %d errors; %d deletes\n",
		r.creates, float64(r.creates)/secs, r.admitted, float64(r.admitted)/secs, r.denied, r.unexpected, r.errors, r.deletes)
	if len(r.errorKinds) > 0 {
		var kinds []string
		for _, k := range sortedKeys(r.errorKinds) {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, r.errorKinds[k]))
		}
		fmt.Fprintf(w, "sustain: errors by kind: %s; first: %s\n", strings.Join(kinds, ", "), r.firstError)
	}
	if r.firstUnexpected != "" {
		fmt.Fprintf(w, "sustain: first denial not for the guarantee: %s\n", r.firstUnexpected)
	}
	fmt.Fprintf(w, "sustain: max over-admission %d GPUs (a tenant's GPUs in stored pods beyond its guarantee of %d); /mutate decisions per replica %v\n",
		r.overAdmission, c.guaranteed, r.perReplica)
	fmt.Fprintf(w, "sustain: readings every %s (time, TenantLedgers: objects, KiB, reservations; most GPUs a tenant's pods held; creates so far; load average):\n", c.sample)
	for _, s := range r.readings {
		fmt.Fprintf(w, "  %6s  %2d objects %8.1f KiB %6d reservations  held max %3d/%d  creates %7d  load %s\n",
			s.at.Round(time.Second), s.ledger.Objects, kib(s.ledger.Bytes), s.ledger.Entries, s.maxHeld, c.guaranteed, s.creates, s.load)
	}
	if n := len(r.readings); n > 0 {
		first, last, peak := r.readings[0], r.readings[n-1], r.readings[0]
		for _, s := range r.readings {
			if s.ledger.Bytes > peak.ledger.Bytes {
				peak = s
			}
		}
		fmt.Fprintf(w, "sustain: ledger first %.1f KiB (%d reservations), max %.1f KiB (%d) at %s, last %.1f KiB (%d)\n",
			kib(first.ledger.Bytes), first.ledger.Entries, kib(peak.ledger.Bytes), peak.ledger.Entries, peak.at.Round(time.Second),
			kib(last.ledger.Bytes), last.ledger.Entries)
	}
	f := judgeFlatness(r.readings, r.elapsed)
	var windows []string
	for from := time.Duration(0); from < r.elapsed; from += f.window {
		peak, seen := 0, false
		for _, s := range r.readings {
			if s.at >= from && s.at < from+f.window {
				peak, seen = max(peak, s.ledger.Bytes), true
			}
		}
		if seen {
			windows = append(windows, fmt.Sprintf("%.1f", kib(peak)))
		}
	}
	fmt.Fprintf(w, "sustain: ledger's largest size per %s window: %s KiB\n", f.window, strings.Join(windows, ", "))
	fmt.Fprintf(w, "sustain: %s\n", f)
	fmt.Fprintf(w, "sustain: load average at start %s, at end %s\n", r.loadStart, r.loadEnd)
	return f
}

// check fails t on what the run must never show.
func (r result) check(t *testing.T, f flatness) {
	t.Helper()
	if r.errors > 0 {
		t.Errorf("%d errors (first: %s)", r.errors, r.firstError)
	}
	if r.unexpected > 0 {
		t.Errorf("%d denials not for the guarantee (first: %s)", r.unexpected, r.firstUnexpected)
	}
	if r.overAdmission > 0 {
		t.Errorf("over-admission: a tenant held %d GPUs beyond its guarantee", r.overAdmission)
	}
	if r.admitted == 0 || r.denied == 0 {
		t.Errorf("the run must admit and deny (admitted %d, denied %d): the guarantee was not exercised", r.admitted, r.denied)
	}
	for i, d := range r.perReplica {
		if d == 0 && r.cfg.apiServers > 1 {
			t.Errorf("replica %d decided nothing: the run did not go through both replicas", i)
		}
	}
	if !f.flat {
		t.Errorf("the ledger grew: %s", f)
	}
}

// TestJudgeFlatness: the last window's largest size against the second's.
func TestJudgeFlatness(t *testing.T) {
	series := func(bytes ...int) []reading {
		var out []reading
		for i, b := range bytes {
			out = append(out, reading{at: time.Duration(i+1) * 30 * time.Second})
			out[i].ledger.Bytes = b
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		bytes    []int
		wantFlat bool
	}{
		// Readings at 30 s … 5 m; second minute 60–90 s, last 4–5 m.
		{"flat", []int{40 << 10, 100 << 10, 110 << 10, 100 << 10, 105 << 10, 100 << 10, 110 << 10, 120 << 10, 118 << 10, 119 << 10}, true},
		{"growing", []int{40 << 10, 100 << 10, 110 << 10, 140 << 10, 170 << 10, 200 << 10, 230 << 10, 260 << 10, 290 << 10, 320 << 10}, false},
		{"small", []int{1 << 10, 2 << 10, 2 << 10, 4 << 10, 8 << 10, 8 << 10, 9 << 10, 10 << 10, 12 << 10, 12 << 10}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := judgeFlatness(series(tc.bytes...), 5*time.Minute)
			if f.flat != tc.wantFlat {
				t.Errorf("flat = %v, want %v (%s)", f.flat, tc.wantFlat, f)
			}
		})
	}
}
