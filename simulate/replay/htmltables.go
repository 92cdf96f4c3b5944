package replay

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The HTML page's tables: per revision the tenants, with a candidate the
// changes per tenant, and the cluster. A cell a held --fail-if reads is
// marked (class fire), as is its row.

type tableView struct {
	ID   string
	Head []headView
	Rows []rowView
	Foot []rowView
}

type headView struct {
	Text string
	Num  bool
}

type rowView struct {
	Cells []cellView
	Fire  bool
}

type cellView struct {
	Text string
	// V is the value the table sorts by ("" sorts by Text).
	V    string
	Num  bool
	Fire bool
	// Codes is a list of rule codes.
	Codes bool
}

// metricColumn is a tenant metric of --fail-if (a key of tenantMetrics)
// as a column: its heading and how a value and a change are written.
type metricColumn struct {
	Metric, Head string
	Value        func(float64) string
	Change       func(float64) string
}

func count(v float64) string          { return strconv.Itoa(int(math.Round(v))) }
func countChange(v float64) string    { return fmt.Sprintf("%+d", int(math.Round(v))) }
func gpuHours(v float64) string       { return strconv.FormatFloat(v, 'f', 1, 64) }
func gpuHoursChange(v float64) string { return fmt.Sprintf("%+.1f", v) }
func waitChange(v float64) string {
	if v < 0 {
		return "-" + duration(-v)
	}
	return "+" + duration(v)
}

// metricColumns are the per-tenant metrics, in the order of the text
// table's columns.
var metricColumns = []metricColumn{
	{"admitted", "admitted", count, countChange},
	{"denied", "denied", count, countChange},
	{"completed", "completed", count, countChange},
	{"never_started", "never started", count, countChange},
	{"wait.p50", "wait p50", duration, waitChange},
	{"wait.p95", "wait p95", duration, waitChange},
	{"wait.max", "wait max", duration, waitChange},
	{"gpu_hours_used", "GPU\u2011h used", gpuHours, gpuHoursChange},
	{"preemptions", "pre\u00ademp\u00adtions", count, countChange},
	{"gpu_hours_lost", "GPU\u2011h lost", gpuHours, gpuHoursChange},
}

// fires reports whether a held check reads metric of selector (a tenant,
// "guaranteed", or "" for the cluster's).
func fires(held []FailIf, metric, selector string) bool {
	for _, f := range held {
		if f.Metric == metric && f.Selector == selector {
			return true
		}
	}
	return false
}

func num(text string, v float64, fire bool) cellView {
	return cellView{Text: text, V: strconv.FormatFloat(v, 'g', -1, 64), Num: true, Fire: fire}
}

// tenantTable is one revision's tenants, the guaranteed classes in the
// footer; held marks the cells of the checks on this revision's values.
func tenantTable(id string, r *Report, held []FailIf) tableView {
	t := tableView{ID: id, Head: []headView{{Text: "tenant"}, {Text: "submitted", Num: true}}}
	for _, c := range metricColumns {
		t.Head = append(t.Head, headView{Text: c.Head, Num: true})
		if c.Metric == "never_started" {
			t.Head[len(t.Head)-1].Text = "never started (authority / capacity)"
		}
	}
	t.Head = append(t.Head, headView{Text: "GPU\u2011h guaran\u00adteed", Num: true}, headView{Text: "denied by"})
	row := func(name, selector string, s TenantStats) rowView {
		rv := rowView{Cells: []cellView{{Text: name}, num(strconv.Itoa(s.Submitted), float64(s.Submitted), false)}}
		for _, c := range metricColumns {
			v := tenantMetrics[c.Metric](s)
			fire := fires(held, c.Metric, selector)
			rv.Fire = rv.Fire || fire
			text := c.Value(v)
			if c.Metric == "never_started" {
				text += fmt.Sprintf(" (%d / %d)", s.HeldByAuthority, s.HeldByCapacity)
			}
			rv.Cells = append(rv.Cells, num(text, v, fire))
		}
		rv.Cells = append(rv.Cells, num(gpuHours(s.GPUHoursGuaranteed), s.GPUHoursGuaranteed, false), cellView{Text: strings.ReplaceAll(codes(s.DeniedBy), ",", ", "), Codes: true})
		return rv
	}
	for _, s := range r.Tenants {
		t.Rows = append(t.Rows, row(s.Tenant, s.Tenant, s))
	}
	if r.Guaranteed.Submitted > 0 {
		t.Foot = append(t.Foot, row("guaranteed (non-preemptible)", "guaranteed", r.Guaranteed))
	}
	return t
}

// changeTable is the candidate minus the baseline per tenant (and the
// guaranteed classes), every held check marked.
func changeTable(o *Outcome) tableView {
	t := tableView{ID: "changes", Head: []headView{{Text: "tenant"}}}
	for _, c := range metricColumns {
		t.Head = append(t.Head, headView{Text: c.Head, Num: true})
	}
	row := func(name, selector string, b, c TenantStats) rowView {
		rv := rowView{Cells: []cellView{{Text: name}}}
		for _, col := range metricColumns {
			get := tenantMetrics[col.Metric]
			d := change(get(b), get(c))
			fire := fires(o.Held, col.Metric, selector)
			rv.Fire = rv.Fire || fire
			rv.Cells = append(rv.Cells, num(col.Change(d), d, fire))
		}
		return rv
	}
	base, cand := byTenant(o.Baseline), byTenant(o.Candidate)
	for _, d := range o.Deltas {
		t.Rows = append(t.Rows, row(d.Tenant, d.Tenant, base[d.Tenant], cand[d.Tenant]))
	}
	if o.Baseline.Guaranteed.Submitted+o.Candidate.Guaranteed.Submitted > 0 {
		t.Foot = append(t.Foot, row("guaranteed (non-preemptible)", "guaranteed", o.Baseline.Guaranteed, o.Candidate.Guaranteed))
	}
	return t
}

func byTenant(r *Report) map[string]TenantStats {
	m := map[string]TenantStats{}
	for _, t := range r.Tenants {
		m[t.Tenant] = t
	}
	return m
}

// clusterTable is the cluster's numbers per revision and, with a
// candidate, their change.
func clusterTable(o *Outcome, held []FailIf) tableView {
	revs := revisions(o)
	t := tableView{ID: "cluster", Head: []headView{{Text: "cluster"}}}
	for _, r := range revs {
		t.Head = append(t.Head, headView{Text: r.name, Num: true})
	}
	if len(revs) == 2 {
		t.Head = append(t.Head, headView{Text: "change", Num: true})
	}
	type metric struct {
		name, key string
		get       func(ClusterStats) float64
		text      func(float64) string
	}
	metrics := []metric{
		{"GPUs", "", func(c ClusterStats) float64 { return c.GPUs }, gpuHours},
		{"allocated GPU-h", "allocated_gpu_hours", clusterMetrics["allocated_gpu_hours"], gpuHours},
		{"mean allocation %", "mean_allocation", clusterMetrics["mean_allocation"], gpuHours},
		{"idle GPU-h", "idle_gpu_hours", clusterMetrics["idle_gpu_hours"], gpuHours},
		{"stranded GPU-h", "stranded_gpu_hours", clusterMetrics["stranded_gpu_hours"], gpuHours},
		{"down GPU-h", "", func(c ClusterStats) float64 { return c.DownGPUHours }, gpuHours},
		{"smallest largest-startable gang (GPUs)", "", func(c ClusterStats) float64 { return float64(c.MinLargestGang) }, count},
	}
	for _, m := range metrics {
		fire := m.key != "" && fires(held, m.key, "")
		rv := rowView{Cells: []cellView{{Text: m.name}}, Fire: fire}
		for _, r := range revs {
			v := m.get(r.r.Cluster)
			rv.Cells = append(rv.Cells, num(m.text(v), v, fire && len(revs) == 1))
		}
		if len(revs) == 2 {
			d := change(m.get(o.Baseline.Cluster), m.get(o.Candidate.Cluster))
			rv.Cells = append(rv.Cells, num(fmt.Sprintf("%+.1f", d), d, fire))
		}
		t.Rows = append(t.Rows, rv)
	}
	return t
}
