package replay

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strings"

	"github.com/mandate-dev/mandate/internal/chart"
)

// The HTML page's charts: allocation over time, waits and denials, the
// revisions on the same scales.

// The charts' widths: one chart across the page, or two side by side.
const (
	fullWidth = 920.0
	halfWidth = 450.0
)

var palette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#e15759", "#9c755f", "#ff9da7", "#bab0ac"}

// tenantNames are the tenants of every revision, sorted: one colour each
// on both charts.
func tenantNames(revs []revision) []string {
	seen := map[string]bool{}
	var names []string
	for _, r := range revs {
		for _, t := range r.r.Tenants {
			if !seen[t.Tenant] {
				seen[t.Tenant] = true
				names = append(names, t.Tenant)
			}
		}
	}
	sort.Strings(names)
	return names
}

// allocChart stacks r's tenants' allocated GPUs over simulated hours, on
// the scale of every revision (the longest run, the largest cluster).
func allocChart(r revision, revs []revision) template.HTML {
	x := chart.Axis{Title: "simulated time", Unit: "hours"}
	y := chart.Axis{Title: "allocated", Unit: "GPUs"}
	for _, o := range revs {
		x.Max = math.Max(x.Max, o.r.End/3600)
		y.Max = math.Max(y.Max, o.r.Cluster.GPUs)
	}
	c := chart.AreaChart{ID: "alloc-" + strings.ToLower(r.name), Title: r.name + ": revision " + r.r.Revision, X: x, Y: y,
		Titles: map[string]string{}, Capacity: r.r.Cluster.GPUs, CapacityKey: "capacity", End: r.r.End / 3600,
		Width: fullWidth, Height: 300}
	if len(revs) == 2 {
		c.Width = halfWidth
	}
	used := map[string]float64{}
	for _, t := range r.r.Tenants {
		used[t.Tenant] = t.GPUHoursUsed
	}
	peak := map[string]float64{}
	for _, s := range r.r.Series {
		sm := chart.Sample{At: s.At / 3600, Values: s.Allocated}
		for t, g := range s.Allocated {
			peak[t] = math.Max(peak[t], g)
		}
		c.Samples = append(c.Samples, sm)
	}
	for i, t := range tenantNames(revs) {
		if peak[t] == 0 {
			continue
		}
		c.Series = append(c.Series, chart.Series{Key: t, Label: fmt.Sprintf("%s (%s GPU-h)", t, gpuHours(used[t])), Name: t, Color: palette[i%len(palette)]})
		c.Titles[t] = fmt.Sprintf("%s: peak %s GPUs, %s GPU-h used", t, chart.Num(peak[t], 2), gpuHours(used[t]))
	}
	c.Series = append(c.Series, chart.Series{Key: "capacity", Label: fmt.Sprintf("cluster (%s GPUs)", chart.Num(r.r.Cluster.GPUs, 2)), Color: "#1d2430", Line: true})
	return c.HTML()
}

// waitUnit is the unit waits up to top seconds read best in.
func waitUnit(top float64) (string, float64) {
	switch {
	case top >= 3*86400:
		return "days", 86400
	case top >= 2*3600:
		return "hours", 3600
	case top >= 120:
		return "minutes", 60
	}
	return "seconds", 1
}

var waitColors = map[string][2]string{"p50": {"#a6c8e6", "#2f6396"}, "p95": {"#fbc48f", "#c4600c"}, "max": {"#f4a6a4", "#a8282b"}}

// waitChart draws, per tenant, its p50, p95 and max wait in each
// revision, the revisions' bars of a percentile side by side.
func waitChart(revs []revision) template.HTML {
	top := 0.0
	for _, r := range revs {
		for _, t := range r.r.Tenants {
			top = math.Max(top, t.WaitMax)
		}
	}
	unit, div := waitUnit(top)
	short := map[string]string{"seconds": "s", "minutes": "min", "hours": "h", "days": "d"}[unit]
	c := chart.BarChart{ID: "waits", Category: "tenant",
		Value: chart.Axis{Title: "wait", Unit: unit}, Width: fullWidth, Format: func(v float64) string { return chart.Num(v, 1) }}
	stats := func(s TenantStats) []float64 { return []float64{s.WaitP50, s.WaitP95, s.WaitMax} }
	for _, q := range []string{"p50", "p95", "max"} {
		for ri, r := range revs {
			s := chart.Series{Key: q + "-" + strings.ToLower(r.name), Label: q, Short: q, Color: waitColors[q][ri+2-len(revs)]}
			if len(revs) == 2 {
				s.Label, s.Short = q+", "+strings.ToLower(r.name), q+" · "+strings.ToLower(r.name)
			}
			c.Series = append(c.Series, s)
		}
	}
	for _, name := range tenantNames(revs) {
		g := chart.Group{Label: name}
		for qi, q := range []string{"p50", "p95", "max"} {
			for _, r := range revs {
				s := byTenant(r.r)[name]
				v := stats(s)[qi]
				b := chart.Bar{Series: q + "-" + strings.ToLower(r.name), Value: v / div, Text: chart.Num(v/div, 1) + " " + short,
					Title: fmt.Sprintf("%s, %s wait, %s: %.0f s (%s) over %d started jobs", name, q, strings.ToLower(r.name), v, duration(v), s.Admitted-s.NeverStarted)}
				if s.Admitted-s.NeverStarted == 0 {
					b.Text = "no job started"
				}
				g.Bars = append(g.Bars, b)
			}
		}
		c.Groups = append(c.Groups, g)
	}
	return c.HTML()
}

var denialColors = [2]string{"#f4a6a4", "#a8282b"}

// denialChart draws, per rule, the requests it denied in each revision,
// with the tenants they came from on hover.
func denialChart(revs []revision) template.HTML {
	c := chart.BarChart{ID: "denials", Category: "rule",
		Value: chart.Axis{Title: "denied", Unit: "requests", Whole: true}, Width: fullWidth, Format: func(v float64) string { return chart.Num(v, 0) }}
	by := make([]map[string]map[string]int, len(revs)) // revision → rule → tenant → count
	rules := map[string]bool{}
	for ri, r := range revs {
		by[ri] = map[string]map[string]int{}
		key := "denied-" + strings.ToLower(r.name)
		s := chart.Series{Key: key, Label: "denied requests", Color: denialColors[ri+2-len(revs)]}
		if len(revs) == 2 {
			s.Label, s.Short = "denied, "+strings.ToLower(r.name), strings.ToLower(r.name)
		}
		c.Series = append(c.Series, s)
		for _, t := range r.r.Tenants {
			for rule, n := range t.DeniedBy {
				if by[ri][rule] == nil {
					by[ri][rule] = map[string]int{}
				}
				by[ri][rule][t.Tenant] += n
				rules[rule] = true
			}
		}
	}
	if len(rules) == 0 {
		return template.HTML(`<p class="note" id="denials">No request was denied.</p>`)
	}
	for _, rule := range sortedRules(rules) {
		g := chart.Group{Label: rule}
		for ri, r := range revs {
			n, parts := 0, []string{}
			for _, t := range sortedTenants(by[ri][rule]) {
				n += by[ri][rule][t]
				parts = append(parts, fmt.Sprintf("%s %d", t, by[ri][rule][t]))
			}
			title := fmt.Sprintf("%s, %s: %d denied", rule, strings.ToLower(r.name), n)
			if len(parts) > 0 {
				title += " (" + strings.Join(parts, ", ") + ")"
			}
			g.Bars = append(g.Bars, chart.Bar{Series: "denied-" + strings.ToLower(r.name), Value: float64(n), Title: title})
		}
		c.Groups = append(c.Groups, g)
	}
	return c.HTML()
}

func sortedRules(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedTenants(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
