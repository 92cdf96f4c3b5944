package replay

import (
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/mandate-dev/mandate/internal/chart"
)

// WriteHTML writes the outcome as one self-contained page (inline CSS,
// SVG and a small sorting script; nothing fetched): allocation over
// simulated time by tenant, waits (p50, p95, max) per tenant and denials
// by rule, the baseline and the candidate on the same scales; the tables,
// with the cells a held --fail-if reads marked.
func WriteHTML(w io.Writer, o *Outcome) error {
	revs := revisions(o)
	v := pageView{FailIf: o.FailIf, CSS: chart.CSS, Script: chart.SortScript, Pair: len(revs) == 2}
	for _, r := range revs {
		held := o.Held
		if o.Candidate != nil {
			held = nil // the changes table marks them
		}
		v.Revisions = append(v.Revisions, revisionView{Name: r.name, R: r.r, Ended: duration(r.r.End),
			Table: tenantTable("tenants-"+strings.ToLower(r.name), r.r, held)})
		v.Alloc = append(v.Alloc, allocChart(r, revs))
	}
	v.Waits = waitChart(revs)
	v.Denials = denialChart(revs)
	if o.Candidate != nil {
		ch := changeTable(o)
		v.Changes = &ch
	}
	v.Cluster = clusterTable(o, o.Held)
	if err := page.Execute(w, v); err != nil {
		return fmt.Errorf("unable to write the HTML page: %w", err)
	}
	return nil
}

type pageView struct {
	FailIf    []string
	CSS       template.CSS
	Script    template.JS
	Pair      bool
	Revisions []revisionView
	Alloc     []template.HTML
	Waits     template.HTML
	Denials   template.HTML
	Changes   *tableView
	Cluster   tableView
}

type revisionView struct {
	Name  string
	R     *Report
	Ended string
	Table tableView
}

type revision struct {
	name string
	r    *Report
}

func revisions(o *Outcome) []revision {
	revs := []revision{{"Baseline", o.Baseline}}
	if o.Candidate != nil {
		revs = append(revs, revision{"Candidate", o.Candidate})
	}
	return revs
}

var page = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>mandate simulate</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d2430;background:#fff}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:26px 0 6px} h3{font-size:14px;margin:14px 0 4px}
.meta{color:#556;font-size:13px;margin:2px 0}
.fail{font-size:15px;font-weight:600;padding:8px 12px;border-left:5px solid #c0392b;background:#fbeeee;color:#8a1c12;margin:10px 0}
.note{color:#556;font-size:12px;margin:2px 0 8px}
{{.CSS}}
</style></head><body>
<h1>mandate simulate</h1>
{{range .Revisions}}<p class="meta">{{.Name}}: revision <b>{{.R.Revision}}</b>, placement {{.R.Placement}}, {{.R.Jobs}} jobs, {{printf "%.0f" .R.Cluster.GPUs}} GPUs, simulated {{.Ended}}</p>
{{end}}{{range .FailIf}}<p class="fail" data-fail-if>fail-if held: {{.}}</p>
{{end}}
<h2>Allocation over simulated time by tenant</h2>
<div class="{{if .Pair}}pair{{else}}single{{end}}">{{range .Alloc}}{{.}}{{end}}</div>
<h2>Wait from submit to start per tenant: p50, p95 and max</h2>
<p class="note">Over the jobs that started; p50 and p95 are nearest-rank percentiles.</p>
{{.Waits}}
<h2>Denied requests by rule</h2>
{{.Denials}}
{{with .Changes}}<h2>Changes (candidate − baseline)</h2>
<p class="note">Marked: what a held --fail-if compared.</p>
{{template "table" .}}{{end}}
{{range .Revisions}}<h2>{{.Name}}: tenants</h2>
{{template "table" .Table}}{{end}}
<h2>Cluster</h2>
{{template "table" .Cluster}}
<script>{{.Script}}</script>
</body></html>
{{define "table"}}<table class="data sortable" id="{{.ID}}"><thead><tr>{{range .Head}}<th{{if .Num}} class="n"{{end}}>{{.Text}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}{{template "row" .}}{{end}}</tbody>{{if .Foot}}<tfoot>{{range .Foot}}{{template "row" .}}{{end}}</tfoot>{{end}}</table>{{end}}
{{define "row"}}<tr{{if .Fire}} class="fire"{{end}}>{{range .Cells}}<td class="{{if .Num}}n{{end}}{{if .Codes}}codes{{end}}{{if .Fire}} fire{{end}}"{{if .V}} data-v="{{.V}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}`))
