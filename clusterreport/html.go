package clusterreport

import (
	"fmt"
	"html/template"
	"io"
	"math"
)

// WriteHTML writes the report as one self-contained page: inline CSS and
// SVG, no script and nothing fetched. It shows per-tenant stacked bars
// (used, idle within guarantee, blocked demand against guarantee and
// ceiling), a heat map of free GPUs per topology domain, and the blocked
// demand with its rule.
func WriteHTML(w io.Writer, r *Report) error {
	if err := page.Execute(w, htmlView(r)); err != nil {
		return fmt.Errorf("unable to write the HTML report: %w", err)
	}
	return nil
}

type barView struct {
	Label, Resource                        string
	Y                                      int
	UsedNP, UsedP, Idle, Pending           seg
	GuaranteeX, CeilingX                   float64
	HasGuarantee, HasCeiling               bool
	Guaranteed, Ceiling, Used, PendingGPUs int
	IdleInGuarantee, NonPreemptible, Depth int
}

type seg struct {
	X, W float64
	N    int
}

type cellView struct {
	X, Y                   int
	Fill                   string
	Domain, Product        string
	Free, Total, Unhealthy int
}

type pageView struct {
	R          *Report
	Bars       []barView
	BarsHeight int
	Cells      []cellView
	HeatHeight int
}

const (
	barLeft  = 230.0
	barWidth = 620.0
	barRow   = 34
	cell     = 46
	perRow   = 16
)

func htmlView(r *Report) pageView {
	v := pageView{R: r}
	for i, t := range r.Tenants {
		scale := float64(max(t.Ceiling, t.Used+t.IdleInGuarantee+t.PendingGPUs, t.Guaranteed, 1))
		w := func(n int) float64 { return math.Round(barWidth*float64(n)/scale*10) / 10 }
		x := func(n int) float64 { return barLeft + w(n) }
		b := barView{Label: t.Tenant, Resource: t.ResourceName(), Y: 10 + i*barRow, Depth: t.Depth,
			Guaranteed: t.Guaranteed, Ceiling: t.Ceiling, Used: t.Used, PendingGPUs: t.PendingGPUs,
			IdleInGuarantee: t.IdleInGuarantee, NonPreemptible: t.NonPreemptible}
		b.UsedNP = seg{X: barLeft, W: w(t.NonPreemptible), N: t.NonPreemptible}
		b.UsedP = seg{X: x(t.NonPreemptible), W: w(t.Used - t.NonPreemptible), N: t.Used - t.NonPreemptible}
		b.Idle = seg{X: x(t.Used), W: w(t.IdleInGuarantee), N: t.IdleInGuarantee}
		b.Pending = seg{X: x(t.Used + t.IdleInGuarantee), W: w(t.PendingGPUs), N: t.PendingGPUs}
		if t.Guaranteed >= 0 {
			b.HasGuarantee, b.GuaranteeX = true, x(t.Guaranteed)
		}
		if t.Ceiling >= 0 {
			b.HasCeiling, b.CeilingX = true, x(t.Ceiling)
		}
		v.Bars = append(v.Bars, b)
	}
	v.BarsHeight = 20 + len(v.Bars)*barRow
	for i, d := range r.Domains {
		c := cellView{X: 4 + (i%perRow)*cell, Y: 4 + (i/perRow)*cell, Domain: d.Domain, Product: d.Product,
			Free: d.Free, Total: d.Total, Unhealthy: d.Unhealthy, Fill: heat(d)}
		v.Cells = append(v.Cells, c)
	}
	v.HeatHeight = 8 + ((len(r.Domains)+perRow-1)/perRow)*cell
	return v
}

// heat colours a domain by its free share: grey when it has nothing
// usable, pale to deep green as more of it is free.
func heat(d DomainRow) string {
	if d.Total == 0 || d.Total == d.Unhealthy {
		return "#b0b0b0"
	}
	f := float64(d.Free) / float64(d.Total)
	light := 92 - int(f*62)
	return fmt.Sprintf("hsl(140, 55%%, %d%%)", light)
}

var page = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Mandate cluster report</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d2430;background:#fff}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:28px 0 8px}
.headline{font-size:17px;font-weight:600;padding:10px 14px;border-left:5px solid #c0392b;background:#fbeeee;margin:10px 0}
.meta{color:#667;font-size:12px}
table{border-collapse:collapse;font-size:13px} th,td{padding:4px 10px;border-bottom:1px solid #e3e6ea;text-align:left;vertical-align:top}
th{background:#f3f5f7} td.n{text-align:right;font-variant-numeric:tabular-nums}
.legend span{display:inline-block;margin-right:14px;font-size:12px} .sw{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-2px}
svg text{font-size:12px;fill:#1d2430}
.rule{font-family:ui-monospace,monospace;font-size:12px}
</style></head><body>
<h1>Mandate cluster report</h1>
<div class="meta">policy revision {{.R.Revision}} · {{.R.Source}}</div>
<p class="headline" id="headline">{{.R.Headline}}</p>
<table id="summary"><tr><th>idle GPUs</th><th>stranded</th><th>unhealthy</th><th>unavailable</th><th>blocked workloads</th><th>blocked GPUs</th></tr>
<tr><td class="n" id="idle">{{.R.IdleGPUs}}</td><td class="n" id="stranded">{{.R.StrandedGPUs}}</td><td class="n" id="unhealthy">{{.R.UnhealthyGPUs}}</td><td class="n">{{.R.UnavailableGPUs}}</td><td class="n">{{.R.BlockedWorkloads}}</td><td class="n">{{.R.BlockedGPUs}}</td></tr></table>

<h2>Tenants: used, idle within guarantee and blocked demand against guarantee and ceiling</h2>
<div class="legend"><span><i class="sw" style="background:#2c5d8f"></i>used, non-preemptible</span><span><i class="sw" style="background:#7fa8d1"></i>used, preemptible</span><span><i class="sw" style="background:#cdebd3;border:1px solid #3b8f50"></i>idle within guarantee</span><span><i class="sw" style="background:#e8a09a"></i>blocked demand</span><span><i class="sw" style="background:#1d2430;width:3px"></i>guarantee</span><span><i class="sw" style="background:#c0392b;width:3px"></i>ceiling</span></div>
<svg id="tenant-bars" xmlns="http://www.w3.org/2000/svg" width="900" height="{{.BarsHeight}}" viewBox="0 0 900 {{.BarsHeight}}">
{{range .Bars}}<g class="tenant" data-tenant="{{.Label}}" data-resource="{{.Resource}}" data-used="{{.Used}}" data-guaranteed="{{.Guaranteed}}" data-ceiling="{{.Ceiling}}" data-pending="{{.PendingGPUs}}">
<text x="{{.Depth}}0" y="{{.Y}}" dy="16">{{.Label}}</text><text x="{{.Depth}}0" y="{{.Y}}" dy="28" style="font-size:10px;fill:#667">{{.Resource}}</text>
<rect x="230" y="{{.Y}}" width="620" height="22" fill="#f3f5f7"/>
{{if .UsedNP.N}}<rect class="used nonpreemptible" x="{{.UsedNP.X}}" y="{{.Y}}" width="{{.UsedNP.W}}" height="22" fill="#2c5d8f"><title>{{.UsedNP.N}} used, non-preemptible</title></rect>{{end}}
{{if .UsedP.N}}<rect class="used preemptible" x="{{.UsedP.X}}" y="{{.Y}}" width="{{.UsedP.W}}" height="22" fill="#7fa8d1"><title>{{.UsedP.N}} used, preemptible</title></rect>{{end}}
{{if .Idle.N}}<rect class="idle" x="{{.Idle.X}}" y="{{.Y}}" width="{{.Idle.W}}" height="22" fill="#cdebd3" stroke="#3b8f50"><title>{{.Idle.N}} idle within guarantee</title></rect>{{end}}
{{if .Pending.N}}<rect class="pending" x="{{.Pending.X}}" y="{{.Y}}" width="{{.Pending.W}}" height="22" fill="#e8a09a"><title>{{.Pending.N}} blocked</title></rect>{{end}}
{{if .HasGuarantee}}<rect class="guarantee" x="{{.GuaranteeX}}" y="{{.Y}}" width="3" height="26" fill="#1d2430" transform="translate(-1.5,-2)"><title>guarantee {{.Guaranteed}}</title></rect>{{end}}
{{if .HasCeiling}}<rect class="ceiling" x="{{.CeilingX}}" y="{{.Y}}" width="3" height="26" fill="#c0392b" transform="translate(-1.5,-2)"><title>ceiling {{.Ceiling}}</title></rect>{{end}}
</g>
{{end}}</svg>

<h2>Free GPUs per {{.R.HeatLevel}}</h2>
<div class="legend"><span><i class="sw" style="background:hsl(140,55%,92%)"></i>none free</span><span><i class="sw" style="background:hsl(140,55%,30%)"></i>all free</span><span><i class="sw" style="background:#b0b0b0;border:2px solid #c0392b"></i>unhealthy</span></div>
<svg id="heatmap" xmlns="http://www.w3.org/2000/svg" width="740" height="{{.HeatHeight}}" viewBox="0 0 740 {{.HeatHeight}}">
{{range .Cells}}<g class="domain" data-domain="{{.Domain}}" data-free="{{.Free}}" data-total="{{.Total}}" data-unhealthy="{{.Unhealthy}}">
<rect class="cell{{if .Unhealthy}} unhealthy{{end}}" x="{{.X}}" y="{{.Y}}" width="42" height="42" rx="3" fill="{{.Fill}}"{{if .Unhealthy}} stroke="#c0392b" stroke-width="3"{{end}}><title>{{.Domain}} ({{.Product}}): {{.Free}} of {{.Total}} free{{if .Unhealthy}}, {{.Unhealthy}} unhealthy{{end}}</title></rect>
<text x="{{.X}}" y="{{.Y}}" dx="21" dy="26" text-anchor="middle">{{.Free}}</text></g>
{{end}}</svg>

<h2>Blocked demand</h2>
<table id="blocked"><thead><tr><th>workload</th><th>tenant</th><th>GPUs</th><th>dimension</th><th>rule</th><th>what holds it</th><th>to run</th></tr></thead><tbody>
{{range .R.Blocked}}<tr class="blocked"><td>{{.Workload}}</td><td>{{.Tenant}}</td><td class="n">{{.GPUs}}</td><td>{{.Dimension}}</td><td class="rule">{{.Rule}}</td><td>{{.Message}}</td><td>{{.Unblock}}</td></tr>
{{end}}</tbody></table>

<h2>Capacity by GPU resource and product</h2>
<table id="capacity"><thead><tr><th>resource</th><th>product</th><th>total</th><th>used</th><th>free</th><th>stranded</th><th>unhealthy</th><th>unavailable</th></tr></thead><tbody>
{{range .R.Capacity}}<tr><td>{{.Resource}}</td><td>{{.Product}}</td><td class="n">{{.Total}}</td><td class="n">{{.Used}}</td><td class="n">{{.Free}}</td><td class="n">{{.Stranded}}</td><td class="n">{{.Unhealthy}}</td><td class="n">{{.Unavailable}}</td></tr>
{{end}}</tbody></table>
</body></html>
`))
