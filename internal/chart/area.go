package chart

import (
	"fmt"
	"html/template"
	"math"
	"strings"
)

// AreaChart stacks series over time as steps: each sample's values hold
// until the next sample. A line marks the capacity; invisible columns
// carry, on hover, the exact values at each sample.
type AreaChart struct {
	ID, Title string
	X, Y      Axis
	// Series are stacked bottom up; Titles are their marks' hover texts
	// (peak, total), by key.
	Series []Series
	Titles map[string]string
	// Samples are in X's unit, ascending.
	Samples []Sample
	// Capacity, when positive, is drawn as a dashed line in the series
	// keyed CapacityKey (give it a Line series for the legend).
	Capacity    float64
	CapacityKey string
	// End is the last time drawn; 0 is the last sample's.
	End           float64
	Width, Height float64
}

// Sample is the values at one time.
type Sample struct {
	At     float64
	Values map[string]float64
}

const hoverColumns = 160

// HTML draws the chart.
func (c AreaChart) HTML() template.HTML {
	colors := seriesColors(c.Series)
	end := c.End
	top := math.Max(c.Y.Max, c.Capacity)
	for _, s := range c.Samples {
		end = math.Max(end, s.At)
		sum := 0.0
		for _, v := range s.Values {
			sum += v
		}
		top = math.Max(top, sum)
	}
	yTitleW := 18.0
	yTickW := textWidth(Num(NiceMax(top, 5, c.Y.Whole), 1), font) + 6
	x0 := yTitleW + yTickW + 4
	w := c.Width - x0 - 16
	h := c.Height - 10 - axisSpace
	xmax := NiceMax(math.Max(end, c.X.Max), tickCount(w), c.X.Whole)
	ymax := NiceMax(top, int(math.Max(2, h/50)), c.Y.Whole)
	px := func(t float64) float64 { return x0 + t/xmax*w }
	py := func(v float64) float64 { return 10 + h - v/ymax*h }
	var b strings.Builder
	svgOpen(&b, c.Width, c.Height)
	for _, t := range Ticks(ymax, int(math.Max(2, h/50)), c.Y.Whole) {
		fmt.Fprintf(&b, `<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/>`, Num(x0, 1), Num(py(t), 1), Num(x0+w, 1), Num(py(t), 1))
		fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="end">%s</text>`, Num(x0-4, 1), Num(py(t)+4, 1), Num(t, 2))
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%s" y1="10" x2="%s" y2="%s"/>`, Num(x0, 1), Num(x0, 1), Num(10+h, 1))
	fmt.Fprintf(&b, `<text class="axis-title y" data-unit="%s" transform="translate(12,%s) rotate(-90)" text-anchor="middle">%s</text>`,
		esc(c.Y.Unit), Num(10+h/2, 1), esc(c.Y.label()))
	xGrid(&b, c.X, xmax, x0, w, 10, 10+h)
	base := make([]float64, len(c.Samples))
	for _, s := range c.Series {
		if len(c.Samples) == 0 {
			break
		}
		if s.Key == c.CapacityKey {
			continue
		}
		top := make([]float64, len(c.Samples))
		for i, sm := range c.Samples {
			top[i] = base[i] + sm.Values[s.Key]
		}
		// The upper edge left to right, the lower one back.
		pts := c.steps(nil, top, px, py, end, false)
		pts = c.steps(pts, base, px, py, end, true)
		fmt.Fprintf(&b, `<polygon class="area" data-series="%s" points="%s" fill="%s" fill-opacity="0.85"><title>%s</title></polygon>`,
			esc(s.Key), strings.Join(pts, " "), esc(colors[s.Key]), esc(c.Titles[s.Key]))
		base = top
	}
	if c.Capacity > 0 {
		fmt.Fprintf(&b, `<line class="capacity" data-series="%s" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2" stroke-dasharray="6 4"><title>%s %s</title></line>`,
			esc(c.CapacityKey), Num(x0, 1), Num(py(c.Capacity), 1), Num(px(end), 1), Num(py(c.Capacity), 1), esc(colors[c.CapacityKey]),
			Num(c.Capacity, 2), esc(c.Y.Unit))
	}
	c.hover(&b, px, w, 10, h, end)
	xAxis(&b, c.X, xmax, x0, w, 10+h, func(v float64) string { return Num(v, 2) })
	b.WriteString(`</svg>`)
	return figure("area", c.ID, c.Title, c.Series, b.String())
}

// hover lays invisible columns over the plot, at most hoverColumns, each
// titled with the values of the sample it starts at.
func (c AreaChart) hover(b *strings.Builder, px func(float64) float64, w, top, h, end float64) {
	n := len(c.Samples)
	if n == 0 {
		return
	}
	step := max(1, (n+hoverColumns-1)/hoverColumns)
	for i := 0; i < n; i += step {
		sm := c.Samples[i]
		next := end
		if i+step < n {
			next = c.Samples[i+step].At
		}
		var t strings.Builder
		fmt.Fprintf(&t, "%s %s %s", c.X.Title, Num(sm.At, 2), c.X.Unit)
		sum := 0.0
		for _, s := range c.Series {
			if v, ok := sm.Values[s.Key]; ok && v != 0 {
				fmt.Fprintf(&t, "\n%s: %s %s", s.name(), Num(v, 2), c.Y.Unit)
				sum += v
			}
		}
		if c.Capacity > 0 {
			fmt.Fprintf(&t, "\nall: %s of %s %s", Num(sum, 2), Num(c.Capacity, 2), c.Y.Unit)
		}
		fmt.Fprintf(b, `<rect class="hover" x="%s" y="%s" width="%s" height="%s"><title>%s</title></rect>`,
			Num(px(sm.At), 1), Num(top, 1), Num(math.Max(px(next)-px(sm.At), 0.5), 1), Num(h, 1), esc(t.String()))
	}
}

// steps appends to pts the corners of a step line through vs (one value
// per sample, held until the next sample, the last until end), left to
// right or, back, right to left; runs of one value make one step.
func (c AreaChart) steps(pts []string, vs []float64, px, py func(float64) float64, end float64, back bool) []string {
	type run struct{ from, to, v float64 }
	var runs []run
	for i, v := range vs {
		to := end
		if i+1 < len(c.Samples) {
			to = c.Samples[i+1].At
		}
		if n := len(runs); n > 0 && runs[n-1].v == v {
			runs[n-1].to = to
			continue
		}
		runs = append(runs, run{c.Samples[i].At, to, v})
	}
	if back {
		for i := len(runs) - 1; i >= 0; i-- {
			pts = append(pts, pt(px(runs[i].to), py(runs[i].v)), pt(px(runs[i].from), py(runs[i].v)))
		}
		return pts
	}
	for _, r := range runs {
		pts = append(pts, pt(px(r.from), py(r.v)), pt(px(r.to), py(r.v)))
	}
	return pts
}

func pt(x, y float64) string { return Num(x, 1) + "," + Num(y, 1) }
