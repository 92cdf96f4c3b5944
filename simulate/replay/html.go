package replay

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
)

// WriteHTML writes the outcome as one self-contained page: the tables,
// and inline SVG plots of allocation over time by tenant, the wait
// distribution per tenant and the denials by rule, per revision.
func WriteHTML(w io.Writer, o *Outcome) error {
	type section struct {
		Name    string
		R       *Report
		Alloc   template.HTML
		Waits   template.HTML
		Denials template.HTML
		Table   string
	}
	var secs []section
	for _, x := range []struct {
		name string
		r    *Report
	}{{"Baseline", o.Baseline}, {"Candidate", o.Candidate}} {
		if x.r == nil {
			continue
		}
		var tb strings.Builder
		writeReport(&tb, x.name, x.r)
		secs = append(secs, section{Name: x.name, R: x.r, Alloc: allocSVG(x.r), Waits: waitSVG(x.r), Denials: denialSVG(x.r), Table: tb.String()})
	}
	var full strings.Builder
	if err := WriteTable(&full, o); err != nil {
		return err
	}
	return page.Execute(w, map[string]any{"Sections": secs, "Full": full.String(), "FailIf": o.FailIf})
}

var page = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>mandate simulate</title>
<style>body{font-family:sans-serif;margin:2em}pre{background:#f6f6f6;padding:1em;overflow:auto}svg{border:1px solid #ddd;margin:.5em 0}h2{margin-top:2em}.fail{color:#b00}</style>
</head><body>
<h1>mandate simulate</h1>
{{range .FailIf}}<p class="fail" data-fail-if>fail-if held: {{.}}</p>{{end}}
{{range .Sections}}<section id="{{.Name}}"><h2>{{.Name}}: revision {{.R.Revision}}</h2>
<h3>Allocation over time by tenant (GPUs)</h3>{{.Alloc}}
<h3>Wait per tenant (p50, p95, max)</h3>{{.Waits}}
<h3>Denials by rule</h3>{{.Denials}}
</section>{{end}}
<h2>Tables</h2><pre>{{.Full}}</pre>
</body></html>
`))

var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// allocSVG stacks each tenant's allocated GPUs over the samples.
func allocSVG(r *Report) template.HTML {
	const wd, ht = 720.0, 240.0
	var tenants []string
	for _, t := range r.Tenants {
		tenants = append(tenants, t.Tenant)
	}
	sort.Strings(tenants)
	end := math.Max(r.End, 1)
	top := math.Max(r.Cluster.GPUs, 1)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="alloc" xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g">`, wd, ht+20, wd, ht+20)
	base := make([]float64, len(r.Series))
	for k, t := range tenants {
		var pts []string
		for i, s := range r.Series {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", s.At/end*wd, ht-(base[i]+s.Allocated[t])/top*ht))
		}
		for i := len(r.Series) - 1; i >= 0; i-- {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", r.Series[i].At/end*wd, ht-base[i]/top*ht))
		}
		for i, s := range r.Series {
			base[i] += s.Allocated[t]
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polygon points="%s" fill="%s" fill-opacity="0.8"><title>%s</title></polygon>`, strings.Join(pts, " "), palette[k%len(palette)], template.HTMLEscapeString(t))
		}
		fmt.Fprintf(&b, `<text x="%d" y="%g" font-size="11" fill="%s">%s</text>`, 5+k*110, ht+15, palette[k%len(palette)], template.HTMLEscapeString(t))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// waitSVG draws, per tenant, bars of its p50, p95 and max wait.
func waitSVG(r *Report) template.HTML {
	const wd, row = 720.0, 22.0
	top := 1.0
	for _, t := range r.Tenants {
		top = math.Max(top, t.WaitMax)
	}
	var b strings.Builder
	h := row*float64(len(r.Tenants)) + 10
	fmt.Fprintf(&b, `<svg class="waits" xmlns="http://www.w3.org/2000/svg" width="%g" height="%g">`, wd, h)
	for i, t := range r.Tenants {
		y := float64(i)*row + 5
		fmt.Fprintf(&b, `<text x="0" y="%g" font-size="11">%s</text>`, y+12, template.HTMLEscapeString(t.Tenant))
		for k, v := range []float64{t.WaitMax, t.WaitP95, t.WaitP50} {
			fmt.Fprintf(&b, `<rect x="150" y="%g" width="%.1f" height="14" fill="%s"><title>%s</title></rect>`, y, v/top*(wd-160), palette[k], duration(v))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// denialSVG draws one bar per rule, all tenants summed.
func denialSVG(r *Report) template.HTML {
	by := map[string]int{}
	for _, t := range r.Tenants {
		for c, n := range t.DeniedBy {
			by[c] += n
		}
	}
	rules := make([]string, 0, len(by))
	top := 1
	for c, n := range by {
		rules = append(rules, c)
		top = max(top, n)
	}
	sort.Strings(rules)
	const wd, row = 720.0, 22.0
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="denials" xmlns="http://www.w3.org/2000/svg" width="%g" height="%g">`, wd, row*float64(len(rules))+10)
	for i, c := range rules {
		y := float64(i)*row + 5
		fmt.Fprintf(&b, `<text x="0" y="%g" font-size="11">%s</text><rect x="220" y="%g" width="%.1f" height="14" fill="#e15759"><title>%d</title></rect>`,
			y+12, template.HTMLEscapeString(c), y, float64(by[c])/float64(top)*(wd-230), by[c])
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
