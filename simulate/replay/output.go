package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
)

// Outcome is what `mandate simulate run` prints: the baseline's report,
// and with --candidate the candidate's and the per-tenant changes.
type Outcome struct {
	Baseline  *Report       `json:"baseline"`
	Candidate *Report       `json:"candidate,omitempty"`
	Deltas    []TenantDelta `json:"deltas,omitempty"`
	// FailIf are the --fail-if expressions that held (the run exits 1),
	// with what they compared; Held the same checks parsed (the HTML page
	// marks the cells they read).
	FailIf []string `json:"failIf,omitempty"`
	Held   []FailIf `json:"-"`
}

// TenantDelta is the candidate's change from the baseline for one tenant
// (candidate minus baseline).
type TenantDelta struct {
	Tenant       string  `json:"tenant"`
	Admitted     int     `json:"admitted"`
	Denied       int     `json:"denied"`
	Completed    int     `json:"completed"`
	NeverStarted int     `json:"neverStarted"`
	WaitP50      float64 `json:"waitP50"`
	WaitP95      float64 `json:"waitP95"`
	WaitMax      float64 `json:"waitMax"`
	GPUHoursUsed float64 `json:"gpuHoursUsed"`
	Preemptions  int     `json:"preemptions"`
	GPUHoursLost float64 `json:"gpuHoursLost"`
}

// Compare fills the deltas of o.
func (o *Outcome) Compare() {
	if o.Candidate == nil {
		return
	}
	by, cand := byTenant(o.Baseline), byTenant(o.Candidate)
	seen := map[string]bool{}
	var names []string
	for _, t := range append(o.Baseline.Tenants, o.Candidate.Tenants...) {
		if !seen[t.Tenant] {
			seen[t.Tenant] = true
			names = append(names, t.Tenant)
		}
	}
	sort.Strings(names)
	o.Deltas = nil
	for _, n := range names {
		o.Deltas = append(o.Deltas, delta(n, by[n], cand[n]))
	}
}

// delta is c minus b for one tenant.
func delta(tenant string, b, c TenantStats) TenantDelta {
	return TenantDelta{Tenant: tenant, Admitted: c.Admitted - b.Admitted, Denied: c.Denied - b.Denied,
		Completed: c.Completed - b.Completed, NeverStarted: c.NeverStarted - b.NeverStarted,
		WaitP50: change(b.WaitP50, c.WaitP50), WaitP95: change(b.WaitP95, c.WaitP95), WaitMax: change(b.WaitMax, c.WaitMax),
		GPUHoursUsed: change(b.GPUHoursUsed, c.GPUHoursUsed), Preemptions: c.Preemptions - b.Preemptions,
		GPUHoursLost: change(b.GPUHoursLost, c.GPUHoursLost)}
}

// change is c - b, where sums of the same hours in another order differ
// by rounding only: below a millionth it is 0.
func change(b, c float64) float64 {
	d := c - b
	if math.Abs(d) < 1e-6 {
		return 0
	}
	return d
}

// WriteJSON writes the outcome as indented JSON.
func WriteJSON(w io.Writer, o *Outcome) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(o)
}

// WriteTable writes the outcome for people: per tenant, the cluster, and
// with a candidate the changes.
func WriteTable(w io.Writer, o *Outcome) error {
	writeReport(w, "baseline", o.Baseline)
	if o.Candidate != nil {
		fmt.Fprintln(w)
		writeReport(w, "candidate", o.Candidate)
		fmt.Fprintln(w)
		fmt.Fprintln(w, "CHANGE (candidate - baseline)")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TENANT\tADMITTED\tDENIED\tCOMPLETED\tNEVER STARTED\tWAIT P50\tWAIT P95\tWAIT MAX\tGPU-H USED\tPREEMPTIONS\tGPU-H LOST")
		for _, d := range o.Deltas {
			fmt.Fprintf(tw, "%s\t%+d\t%+d\t%+d\t%+d\t%+.0fs\t%+.0fs\t%+.0fs\t%+.1f\t%+d\t%+.1f\n", d.Tenant, d.Admitted, d.Denied,
				d.Completed, d.NeverStarted, d.WaitP50, d.WaitP95, d.WaitMax, d.GPUHoursUsed, d.Preemptions, d.GPUHoursLost)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, f := range o.FailIf {
		fmt.Fprintf(w, "\nfail-if held: %s\n", f)
	}
	return nil
}

func writeReport(w io.Writer, name string, r *Report) {
	fmt.Fprintf(w, "%s: revision %s, placement %s, %d jobs, simulated %s\n", strings.ToUpper(name[:1])+name[1:], r.Revision,
		r.Placement, r.Jobs, duration(r.End))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tSUBMITTED\tADMITTED\tDENIED\tCOMPLETED\tNEVER STARTED (AUTH/CAP)\tWAIT P50\tWAIT P95\tWAIT MAX\tGPU-H USED/GUARANTEED\tPREEMPTIONS\tGPU-H LOST\tDENIED BY")
	for _, t := range r.Tenants {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d (%d/%d)\t%s\t%s\t%s\t%.1f/%.1f\t%d\t%.1f\t%s\n", t.Tenant, t.Submitted, t.Admitted,
			t.Denied, t.Completed, t.NeverStarted, t.HeldByAuthority, t.HeldByCapacity, duration(t.WaitP50), duration(t.WaitP95),
			duration(t.WaitMax), t.GPUHoursUsed, t.GPUHoursGuaranteed, t.Preemptions, t.GPUHoursLost, codes(t.DeniedBy))
	}
	_ = tw.Flush()
	c := r.Cluster
	fmt.Fprintf(w, "Cluster: %.0f GPUs, allocated %.1f GPU-h (mean %.1f%%), idle %.1f GPU-h, stranded %.1f GPU-h, down %.1f GPU-h, smallest largest-startable gang %d GPUs\n",
		c.GPUs, c.AllocatedGPUHours, c.MeanAllocation, c.IdleGPUHours, c.StrandedGPUHours, c.DownGPUHours, c.MinLargestGang)
	if g := r.Guaranteed; g.Submitted > 0 {
		fmt.Fprintf(w, "Guaranteed (non-preemptible classes): %d submitted, %d denied, %d never started, wait p95 %s\n",
			g.Submitted, g.Denied, g.NeverStarted, duration(g.WaitP95))
	}
}

func codes(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, ",")
}

// duration prints seconds as the largest fitting unit.
func duration(s float64) string {
	switch {
	case s >= 86400:
		return fmt.Sprintf("%.1fd", s/86400)
	case s >= 3600:
		return fmt.Sprintf("%.1fh", s/3600)
	case s >= 60:
		return fmt.Sprintf("%.1fm", s/60)
	}
	return fmt.Sprintf("%.0fs", s)
}
