package chart

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// Bar is one value of one series: a bar of a BarChart, a segment or a
// marker of a StackRow.
type Bar struct {
	Series string
	Value  float64
	// Text is the value as written beside or on the bar; "" writes
	// Format(Value).
	Text string
	// Title is the hover text with the exact numbers.
	Title string
}

// BarChart is a horizontal bar chart: per group (a tenant, a rule) one
// bar per value, each on its own row, labelled with its series' Short
// name and its value.
type BarChart struct {
	ID, Title string
	// Category titles the groups (tenant, rule).
	Category string
	Value    Axis
	Series   []Series
	Groups   []Group
	// Width is the plot's width in pixels.
	Width float64
	// Format writes a value for the ticks and the bars; nil writes Num(v, 1).
	Format func(float64) string
}

// Group is one category of a BarChart.
type Group struct {
	Label string
	Bars  []Bar
}

const (
	font      = 12.0 // tick, label and value text
	barHeight = 13.0
	barPitch  = 16.0
	groupGap  = 10.0
	axisSpace = 40.0 // below the plot: ticks and the axis title
	headSpace = 20.0 // above the plot: the category title
)

func (c BarChart) format(v float64) string {
	if c.Format == nil {
		return Num(v, 1)
	}
	return c.Format(v)
}

func (c BarChart) text(b Bar) string {
	if b.Text != "" {
		return b.Text
	}
	return c.format(b.Value)
}

// HTML draws the chart.
func (c BarChart) HTML() template.HTML {
	shorts := map[string]string{}
	for _, s := range c.Series {
		shorts[s.Key] = s.Short
	}
	colors := seriesColors(c.Series)
	groupW, shortW, valueW, top, rows := 0.0, 0.0, 0.0, c.Value.Max, 0
	for _, g := range c.Groups {
		groupW = math.Max(groupW, textWidth(g.Label, font))
		for _, b := range g.Bars {
			shortW = math.Max(shortW, textWidth(shorts[b.Series], font-1))
			valueW = math.Max(valueW, textWidth(c.text(b), font))
			top = math.Max(top, b.Value)
			rows++
		}
	}
	// With per-bar labels the group's label has a line of its own above
	// its bars; without, it labels its bar.
	heading := shortW > 0
	width := c.Width
	x0 := groupW + 12
	lines := rows
	if heading {
		x0, lines = math.Max(shortW+12, 40), rows+len(c.Groups)
	}
	w := width - x0 - valueW - 12
	max := NiceMax(top, tickCount(w), c.Value.Whole)
	height := headSpace + float64(lines)*barPitch + float64(len(c.Groups))*groupGap + axisSpace
	var b strings.Builder
	svgOpen(&b, width, height)
	fmt.Fprintf(&b, `<text class="axis-title y" x="0" y="13">%s</text>`, esc(c.Category))
	plotBottom := height - axisSpace
	xGrid(&b, c.Value, max, x0, w, headSpace, plotBottom)
	y := headSpace + groupGap/2
	for gi, g := range c.Groups {
		fmt.Fprintf(&b, `<g class="group" data-group="%s">`, esc(g.Label))
		fmt.Fprintf(&b, `<text class="category" x="0" y="%s">%s</text>`, Num(y+barHeight-3, 1), esc(g.Label))
		if heading {
			y += barPitch
		}
		for bi, bar := range g.Bars {
			id := fmt.Sprintf("%s-%d-%d", c.ID, gi, bi)
			bw := math.Max(0, bar.Value/max*w)
			if s := shorts[bar.Series]; s != "" {
				fmt.Fprintf(&b, `<text class="series-label" x="%s" y="%s" text-anchor="end">%s</text>`, Num(x0-6, 1), Num(y+barHeight-3, 1), esc(s))
			}
			fmt.Fprintf(&b, `<rect class="bar" id="%s" data-series="%s" data-value="%s" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`,
				esc(id), esc(bar.Series), esc(strconv.FormatFloat(bar.Value, 'g', -1, 64)), Num(x0, 1), Num(y, 1), Num(bw, 1), Num(barHeight, 1),
				esc(colors[bar.Series]), esc(bar.Title))
			fmt.Fprintf(&b, `<text class="value" data-for="%s" x="%s" y="%s">%s</text>`, esc(id), Num(x0+bw+4, 1), Num(y+barHeight-3, 1), esc(c.text(bar)))
			y += barPitch
		}
		b.WriteString(`</g>`)
		y += groupGap
	}
	xAxis(&b, c.Value, max, x0, w, plotBottom, c.format)
	b.WriteString(`</svg>`)
	return figure("bars", c.ID, c.Title, c.Series, b.String())
}

func seriesColors(series []Series) map[string]string {
	m := map[string]string{}
	for _, s := range series {
		m[s.Key] = s.Color
	}
	return m
}
