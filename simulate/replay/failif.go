package replay

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// A --fail-if expression is METRIC[SELECTOR] OP VALUE (the selector only
// for per-tenant metrics):
//
//   - METRIC: a tenant's admitted, denied, completed, never_started,
//     wait.p50, wait.p95, wait.max (seconds), gpu_hours_used,
//     preemptions, gpu_hours_lost; or the cluster's stranded_gpu_hours,
//     idle_gpu_hours, allocated_gpu_hours, mean_allocation;
//   - SELECTOR: a tenant's name, or "guaranteed" (every job of a
//     priority class that is not preemptible);
//   - OP: >, >=, <, <=, ==, !=;
//   - VALUE: a number, compared with the value (the candidate's with
//     --candidate); +N% or -N% (with --candidate only), compared with the
//     change from the baseline in percent of the baseline; +N or -N, with
//     the change in the metric's own unit.
//
// A baseline of 0 and a change make any increase +Inf%.
type FailIf struct {
	Text     string
	Metric   string
	Selector string
	Op       string
	Value    float64
	Relative bool // +N% / -N%
	Delta    bool // +N / -N
}

var failIfRe = regexp.MustCompile(`^\s*([a-z_.0-9]+)(?:\[([^\]]+)\])?\s*(>=|<=|==|!=|>|<)\s*([+-]?)([0-9.]+)(%?)\s*$`)

var tenantMetrics = map[string]func(TenantStats) float64{
	"admitted":       func(t TenantStats) float64 { return float64(t.Admitted) },
	"denied":         func(t TenantStats) float64 { return float64(t.Denied) },
	"completed":      func(t TenantStats) float64 { return float64(t.Completed) },
	"never_started":  func(t TenantStats) float64 { return float64(t.NeverStarted) },
	"wait.p50":       func(t TenantStats) float64 { return t.WaitP50 },
	"wait.p95":       func(t TenantStats) float64 { return t.WaitP95 },
	"wait.max":       func(t TenantStats) float64 { return t.WaitMax },
	"gpu_hours_used": func(t TenantStats) float64 { return t.GPUHoursUsed },
	"preemptions":    func(t TenantStats) float64 { return float64(t.Preemptions) },
	"gpu_hours_lost": func(t TenantStats) float64 { return t.GPUHoursLost },
}

var clusterMetrics = map[string]func(ClusterStats) float64{
	"stranded_gpu_hours":  func(c ClusterStats) float64 { return c.StrandedGPUHours },
	"idle_gpu_hours":      func(c ClusterStats) float64 { return c.IdleGPUHours },
	"allocated_gpu_hours": func(c ClusterStats) float64 { return c.AllocatedGPUHours },
	"mean_allocation":     func(c ClusterStats) float64 { return c.MeanAllocation },
}

// ParseFailIf reads one expression.
func ParseFailIf(text string) (FailIf, error) {
	m := failIfRe.FindStringSubmatch(text)
	if m == nil {
		return FailIf{}, fmt.Errorf("--fail-if %q: want METRIC[TENANT] OP VALUE, e.g. 'wait.p95[research-llm] > +20%%'", text)
	}
	f := FailIf{Text: strings.TrimSpace(text), Metric: m[1], Selector: m[2], Op: m[3]}
	v, err := strconv.ParseFloat(m[5], 64)
	if err != nil {
		return FailIf{}, fmt.Errorf("--fail-if %q: %w", text, err)
	}
	if m[4] == "-" {
		v = -v
	}
	f.Value = v
	f.Relative = m[6] == "%"
	f.Delta = m[4] != "" && !f.Relative
	if m[6] == "%" && m[4] == "" {
		return FailIf{}, fmt.Errorf("--fail-if %q: a percentage is a change: write +%s%% or -%s%%", text, m[5], m[5])
	}
	_, tm := tenantMetrics[f.Metric]
	_, cm := clusterMetrics[f.Metric]
	switch {
	case !tm && !cm:
		return FailIf{}, fmt.Errorf("--fail-if %q: unknown metric %q", text, f.Metric)
	case tm && f.Selector == "":
		return FailIf{}, fmt.Errorf("--fail-if %q: %s is per tenant: name one, e.g. %s[research-llm], or [guaranteed]", text, f.Metric, f.Metric)
	case cm && f.Selector != "":
		return FailIf{}, fmt.Errorf("--fail-if %q: %s is the cluster's: no [selector]", text, f.Metric)
	}
	return f, nil
}

// value is the metric in r (0 for a tenant the report has not seen).
func (f FailIf) value(r *Report) float64 {
	if get, ok := clusterMetrics[f.Metric]; ok {
		return get(r.Cluster)
	}
	get := tenantMetrics[f.Metric]
	if f.Selector == "guaranteed" {
		return get(r.Guaranteed)
	}
	for _, t := range r.Tenants {
		if t.Tenant == f.Selector {
			return get(t)
		}
	}
	return 0
}

// Check evaluates f on the outcome: base alone, or base and a candidate.
// It returns whether it holds (the run fails) and what it compared.
func (f FailIf) Check(base, cand *Report) (bool, string, error) {
	if (f.Relative || f.Delta) && cand == nil {
		return false, "", fmt.Errorf("--fail-if %q compares with a baseline: give --candidate", f.Text)
	}
	b := f.value(base)
	if cand == nil {
		return compare(b, f.Op, f.Value), fmt.Sprintf("%s = %g", f.Text, b), nil
	}
	c := f.value(cand)
	switch {
	case f.Relative:
		change := relChange(b, c)
		return compare(change, f.Op, f.Value), fmt.Sprintf("%s: %g → %g (%+.1f%%)", f.Text, b, c, change), nil
	case f.Delta:
		return compare(c-b, f.Op, f.Value), fmt.Sprintf("%s: %g → %g (%+g)", f.Text, b, c, c-b), nil
	default:
		return compare(c, f.Op, f.Value), fmt.Sprintf("%s: candidate %g", f.Text, c), nil
	}
}

// Check evaluates checks on o (after Compare) and records those that
// hold in FailIf and Held.
func (o *Outcome) Check(checks []FailIf) error {
	for _, f := range checks {
		held, what, err := f.Check(o.Baseline, o.Candidate)
		if err != nil {
			return err
		}
		if held {
			o.FailIf = append(o.FailIf, what)
			o.Held = append(o.Held, f)
		}
	}
	return nil
}

func relChange(b, c float64) float64 {
	switch {
	case b == c:
		return 0
	case b == 0 && c > 0:
		return inf
	case b == 0:
		return -inf
	}
	return 100 * (c - b) / b
}

func compare(x float64, op string, y float64) bool {
	switch op {
	case ">":
		return x > y
	case ">=":
		return x >= y
	case "<":
		return x < y
	case "<=":
		return x <= y
	case "==":
		return x == y
	default:
		return x != y
	}
}

var inf = math.Inf(1)
