package clusterreport

import (
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"

	"github.com/mandate-dev/mandate/internal/chart"
)

// WriteHTML writes the report as one self-contained page: inline CSS,
// SVG and a small sorting script, nothing fetched. Per GPU resource, a
// stacked bar per tenant (used, idle within guarantee, blocked demand)
// against its guarantee and ceiling, every number written beside it; a
// heat map of free GPUs per topology domain, each cell named; the blocked
// demand with its rule and the capacity as tables.
func WriteHTML(w io.Writer, r *Report) error {
	v := pageView{R: r, CSS: chart.CSS, Script: chart.SortScript, Tenants: tenantCharts(r), Heat: heatMap(r)}
	if err := page.Execute(w, v); err != nil {
		return fmt.Errorf("unable to write the HTML report: %w", err)
	}
	return nil
}

type pageView struct {
	R       *Report
	CSS     template.CSS
	Script  template.JS
	Tenants []template.HTML
	Heat    template.HTML
}

const chartWidth = 940.0

// tenantSeries are the tenant bars' segments and markers.
var tenantSeries = []chart.Series{
	{Key: "used-nonpreemptible", Label: "used, non-preemptible", Color: "#2c5d8f"},
	{Key: "used-preemptible", Label: "used, preemptible", Color: "#7fa8d1"},
	{Key: "idle", Label: "idle within guarantee", Color: "#cdebd3", Stroke: "#3b8f50"},
	{Key: "pending", Label: "blocked demand", Color: "#e8a09a"},
	{Key: "guarantee", Label: "guarantee", Color: "#1d2430", Line: true},
	{Key: "ceiling", Label: "ceiling", Color: "#c0392b", Line: true},
}

// tenantCharts draws a chart per GPU resource (and product with its own
// quota), the tenants in hierarchy order, all on that resource's scale.
func tenantCharts(r *Report) []template.HTML {
	var order []string
	rows := map[string][]chart.StackRow{}
	for _, t := range r.Tenants {
		name := t.ResourceName()
		if _, ok := rows[name]; !ok {
			order = append(order, name)
		}
		rows[name] = append(rows[name], tenantRow(t))
	}
	var out []template.HTML
	for i, name := range order {
		unit := "GPUs"
		if strings.Contains(name, "/mig-") {
			unit = "MIG slices"
		}
		c := chart.StackChart{ID: "tenants-" + strconv.Itoa(i), Title: name, Category: "tenant",
			Value: chart.Axis{Title: unit, Unit: name, Whole: true}, Series: tenantSeries, Rows: rows[name], Width: chartWidth,
			Format: func(v float64) string { return chart.Num(v, 0) }}
		out = append(out, c.HTML())
	}
	return out
}

func tenantRow(t TenantRow) chart.StackRow {
	res := t.ResourceName()
	row := chart.StackRow{Label: t.Tenant, Indent: t.Depth, Class: "tenant", Data: map[string]string{
		"tenant": t.Tenant, "resource": res, "used": strconv.Itoa(t.Used), "guaranteed": strconv.Itoa(t.Guaranteed),
		"ceiling": strconv.Itoa(t.Ceiling), "pending": strconv.Itoa(t.PendingGPUs)}}
	seg := func(key string, n int, what string) {
		row.Segments = append(row.Segments, chart.Bar{Series: key, Value: float64(n),
			Title: fmt.Sprintf("%s, %s: %d %s", t.Tenant, res, n, what)})
	}
	np, p := t.NonPreemptible, t.Used-t.NonPreemptible
	seg("used-nonpreemptible", np, "used, non-preemptible")
	seg("used-preemptible", p, "used, preemptible")
	seg("idle", t.IdleInGuarantee, "idle within guarantee")
	seg("pending", t.PendingGPUs, fmt.Sprintf("wanted by %d blocked workloads%s", t.PendingWorkloads, blockedBy(t.BlockedBy)))
	var used []chart.Part
	switch {
	case np > 0 && p > 0:
		used = []chart.Part{{Text: fmt.Sprintf("used %d = ", t.Used)}, {Text: fmt.Sprintf("%d non-preemptible", np), Of: "used-nonpreemptible"},
			{Text: " + "}, {Text: fmt.Sprintf("%d preemptible", p), Of: "used-preemptible"}}
	case np > 0:
		used = []chart.Part{{Text: fmt.Sprintf("used %d non-preemptible", np), Of: "used-nonpreemptible"}}
	case p > 0:
		used = []chart.Part{{Text: fmt.Sprintf("used %d preemptible", p), Of: "used-preemptible"}}
	default:
		used = []chart.Part{{Text: "used 0"}}
	}
	var rest []chart.Part
	add := func(text, of string) {
		if len(rest) > 0 {
			rest = append(rest, chart.Part{Text: " · "})
		}
		rest = append(rest, chart.Part{Text: text, Of: of})
	}
	if t.IdleInGuarantee > 0 {
		add(fmt.Sprintf("idle %d", t.IdleInGuarantee), "idle")
	}
	if t.PendingGPUs > 0 {
		add(fmt.Sprintf("blocked %d", t.PendingGPUs), "pending")
	}
	if t.Guaranteed >= 0 {
		add(fmt.Sprintf("guarantee %d", t.Guaranteed), "guarantee")
		row.Markers = append(row.Markers, chart.Bar{Series: "guarantee", Value: float64(t.Guaranteed),
			Title: fmt.Sprintf("%s, %s: guarantee %d", t.Tenant, res, t.Guaranteed)})
	} else {
		add("no guarantee", "")
	}
	if t.Ceiling >= 0 {
		add(fmt.Sprintf("ceiling %d", t.Ceiling), "ceiling")
		row.Markers = append(row.Markers, chart.Bar{Series: "ceiling", Value: float64(t.Ceiling),
			Title: fmt.Sprintf("%s, %s: ceiling %d", t.Tenant, res, t.Ceiling)})
	} else {
		add("no ceiling", "")
	}
	row.Summary = [][]chart.Part{used, rest}
	return row
}

func blockedBy(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	return ", by " + countsText(m)
}

// heatMap draws a cell per domain of r.HeatLevel, named, with its free
// and total GPUs.
func heatMap(r *Report) template.HTML {
	c := chart.HeatMap{ID: "heatmap", Unit: "free / total GPUs per " + r.HeatLevel, Width: chartWidth, Legend: []chart.Series{
		{Key: "none", Label: "none free", Color: heatColor(0)},
		{Key: "all", Label: "all free", Color: heatColor(1)},
		{Key: "unhealthy", Label: "unhealthy (outlined)", Color: unusable, Stroke: "#c0392b"},
	}}
	for _, d := range r.Domains {
		title := fmt.Sprintf("%s %s (%s): %d of %d GPUs free", r.HeatLevel, d.Domain, d.Product, d.Free, d.Total)
		if d.Unhealthy > 0 {
			title += fmt.Sprintf(", %d unhealthy", d.Unhealthy)
		}
		c.Cells = append(c.Cells, chart.Cell{Name: d.Domain, Value: fmt.Sprintf("%d / %d free", d.Free, d.Total), Title: title,
			Fill: heat(d), Alert: d.Unhealthy > 0, Class: "domain", Data: map[string]string{"domain": d.Domain,
				"free": strconv.Itoa(d.Free), "total": strconv.Itoa(d.Total), "unhealthy": strconv.Itoa(d.Unhealthy)}})
	}
	return c.HTML()
}

const unusable = "#b0b0b0"

// heat colours a domain by its free share: grey when it has nothing
// usable, pale to deep green as more of it is free.
func heat(d DomainRow) string {
	if d.Total == 0 || d.Total == d.Unhealthy {
		return unusable
	}
	return heatColor(float64(d.Free) / float64(d.Total))
}

// heatColor mixes pale green (f=0) to deep green (f=1).
func heatColor(f float64) string {
	lo, hi := [3]float64{0xe4, 0xf4, 0xe7}, [3]float64{0x1e, 0x6e, 0x38}
	var c [3]int
	for i := range c {
		c[i] = int(lo[i] + (hi[i]-lo[i])*f + 0.5)
	}
	return fmt.Sprintf("#%02x%02x%02x", c[0], c[1], c[2])
}

var page = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Mandate cluster report</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d2430;background:#fff}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:28px 0 8px}
.headline{font-size:17px;font-weight:600;padding:10px 14px;border-left:5px solid #c0392b;background:#fbeeee;margin:10px 0}
.meta{color:#667;font-size:12px}
.rule{font-family:ui-monospace,monospace;font-size:.95em}
{{.CSS}}
</style></head><body>
<h1>Mandate cluster report</h1>
<div class="meta">policy revision {{.R.Revision}} · {{.R.Source}}</div>
<p class="headline" id="headline">{{.R.Headline}}</p>
<table class="data" id="summary"><thead><tr><th class="n">idle GPUs</th><th class="n">stranded</th><th class="n">unhealthy</th><th class="n">unavailable</th><th class="n">blocked workloads</th><th class="n">blocked GPUs</th></tr></thead>
<tbody><tr><td class="n" id="idle">{{.R.IdleGPUs}}</td><td class="n" id="stranded">{{.R.StrandedGPUs}}</td><td class="n" id="unhealthy">{{.R.UnhealthyGPUs}}</td><td class="n">{{.R.UnavailableGPUs}}</td><td class="n">{{.R.BlockedWorkloads}}</td><td class="n">{{.R.BlockedGPUs}}</td></tr></tbody></table>

<h2>Tenants: used, idle within guarantee and blocked demand against guarantee and ceiling</h2>
{{range .Tenants}}{{.}}{{end}}

<h2>Free GPUs per {{.R.HeatLevel}}</h2>
{{.Heat}}

<h2>Blocked demand</h2>
<table class="data sortable" id="blocked"><thead><tr><th>workload</th><th>tenant</th><th class="n">GPUs</th><th>dimension</th><th>rule</th><th>what holds it</th><th>to run</th></tr></thead><tbody>
{{range .R.Blocked}}<tr class="blocked"><td>{{.Workload}}</td><td>{{.Tenant}}</td><td class="n">{{.GPUs}}</td><td>{{.Dimension}}</td><td class="rule">{{.Rule}}</td><td>{{.Message}}</td><td>{{.Unblock}}</td></tr>
{{end}}</tbody></table>

<h2>Capacity by GPU resource and product</h2>
<table class="data sortable" id="capacity"><thead><tr><th>resource</th><th>product</th><th class="n">total</th><th class="n">used</th><th class="n">free</th><th class="n">stranded</th><th class="n">unhealthy</th><th class="n">unavailable</th></tr></thead><tbody>
{{range .R.Capacity}}<tr><td>{{.Resource}}</td><td>{{.Product}}</td><td class="n">{{.Total}}</td><td class="n">{{.Used}}</td><td class="n">{{.Free}}</td><td class="n">{{.Stranded}}</td><td class="n">{{.Unhealthy}}</td><td class="n">{{.Unavailable}}</td></tr>
{{end}}</tbody></table>
<script>{{.Script}}</script>
</body></html>
`))
