package chart

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// StackChart is a horizontal bar per row made of stacked segments, with
// markers (a guarantee, a ceiling) across it, all rows on one scale. Each
// row's numbers are written beside its bar (Summary) and, where they fit,
// on the segments themselves.
type StackChart struct {
	ID, Title string
	// Category titles the rows (tenant).
	Category string
	Value    Axis
	Series   []Series
	Rows     []StackRow
	Width    float64
	Format   func(float64) string
}

// StackRow is one bar.
type StackRow struct {
	Label  string
	Indent int
	// Class and Data are the row's <g> class and data-* attributes.
	Class string
	Data  map[string]string
	// Segments are stacked from 0 in order; Markers are drawn at their
	// value.
	Segments, Markers []Bar
	// Summary is the text beside the bar, line by line.
	Summary [][]Part
}

// Part is a piece of a summary line; Of, when set, is the series whose
// segment or marker in the row the text gives the value of.
type Part struct {
	Text, Of string
}

const (
	stackHeight = 22.0
	stackPitch  = 40.0
	indentStep  = 12.0
	summaryFont = 11.0
)

func (c StackChart) format(v float64) string {
	if c.Format == nil {
		return Num(v, 1)
	}
	return c.Format(v)
}

// HTML draws the chart.
func (c StackChart) HTML() template.HTML {
	colors := seriesColors(c.Series)
	labelW, summaryW, top := 0.0, 0.0, c.Value.Max
	for _, r := range c.Rows {
		labelW = math.Max(labelW, float64(r.Indent)*indentStep+textWidth(r.Label, font))
		for _, line := range r.Summary {
			t := ""
			for _, p := range line {
				t += p.Text
			}
			summaryW = math.Max(summaryW, textWidth(t, summaryFont))
		}
		sum := 0.0
		for _, s := range r.Segments {
			sum += s.Value
		}
		top = math.Max(top, sum)
		for _, m := range r.Markers {
			top = math.Max(top, m.Value)
		}
	}
	x0 := labelW + 14
	w := c.Width - x0 - summaryW - 16
	max := NiceMax(top, tickCount(w), c.Value.Whole)
	height := headSpace + float64(len(c.Rows))*stackPitch + axisSpace
	var b strings.Builder
	svgOpen(&b, c.Width, height)
	fmt.Fprintf(&b, `<text class="axis-title y" x="0" y="13">%s</text>`, esc(c.Category))
	for ri := range c.Rows {
		y := headSpace + float64(ri)*stackPitch + 6
		fmt.Fprintf(&b, `<rect class="track" x="%s" y="%s" width="%s" height="%s"/>`, Num(x0, 1), Num(y, 1), Num(w, 1), Num(stackHeight, 1))
	}
	xGrid(&b, c.Value, max, x0, w, headSpace, height-axisSpace)
	for ri, r := range c.Rows {
		y := headSpace + float64(ri)*stackPitch + 6
		fmt.Fprintf(&b, `<g class="row %s"`, esc(r.Class))
		for _, k := range sortedKeys(r.Data) {
			fmt.Fprintf(&b, ` data-%s="%s"`, esc(k), esc(r.Data[k]))
		}
		b.WriteString(`>`)
		lx := float64(r.Indent) * indentStep
		fmt.Fprintf(&b, `<text class="category" x="%s" y="%s">%s</text>`, Num(lx, 1), Num(y+12, 1), esc(r.Label))
		ids := map[string]string{}
		at := 0.0
		for _, s := range r.Segments {
			if s.Value <= 0 {
				continue
			}
			id := fmt.Sprintf("%s-%d-%s", c.ID, ri, s.Series)
			ids[s.Series] = id
			x, sw := x0+at/max*w, s.Value/max*w
			at += s.Value
			fmt.Fprintf(&b, `<rect class="bar %s" id="%s" data-series="%s" data-value="%s" x="%s" y="%s" width="%s" height="%s" fill="%s"%s><title>%s</title></rect>`,
				esc(s.Series), esc(id), esc(s.Series), strconv.FormatFloat(s.Value, 'g', -1, 64), Num(x, 1), Num(y, 1), Num(sw, 1),
				Num(stackHeight, 1), esc(colors[s.Series]), stroke(strokeOf(c.Series, s.Series)), esc(s.Title))
			if t := c.text(s); sw >= textWidth(t, summaryFont)+6 {
				fmt.Fprintf(&b, `<text class="inlabel" x="%s" y="%s" text-anchor="middle" style="fill:%s">%s</text>`,
					Num(x+sw/2, 1), Num(y+15, 1), ink(colors[s.Series]), esc(t))
			}
		}
		for _, m := range r.Markers {
			id := fmt.Sprintf("%s-%d-%s", c.ID, ri, m.Series)
			ids[m.Series] = id
			fmt.Fprintf(&b, `<rect class="marker %s" id="%s" data-series="%s" data-value="%s" x="%s" y="%s" width="3" height="%s" fill="%s"><title>%s</title></rect>`,
				esc(m.Series), esc(id), esc(m.Series), strconv.FormatFloat(m.Value, 'g', -1, 64), Num(x0+m.Value/max*w-1.5, 1), Num(y-3, 1),
				Num(stackHeight+6, 1), esc(colors[m.Series]), esc(m.Title))
		}
		sx := x0 + w + 10
		for li, line := range r.Summary {
			fmt.Fprintf(&b, `<text class="summary" x="%s" y="%s">`, Num(sx, 1), Num(y+9+float64(li)*13, 1))
			for _, p := range line {
				if id, ok := ids[p.Of]; ok {
					fmt.Fprintf(&b, `<tspan class="value" data-for="%s">%s</tspan>`, esc(id), esc(p.Text))
				} else {
					b.WriteString(esc(p.Text))
				}
			}
			b.WriteString(`</text>`)
		}
		b.WriteString(`</g>`)
	}
	xAxis(&b, c.Value, max, x0, w, height-axisSpace, c.format)
	b.WriteString(`</svg>`)
	return figure("stack", c.ID, c.Title, c.Series, b.String())
}

func (c StackChart) text(b Bar) string {
	if b.Text != "" {
		return b.Text
	}
	return c.format(b.Value)
}

func strokeOf(series []Series, key string) string {
	for _, s := range series {
		if s.Key == key {
			return s.Stroke
		}
	}
	return ""
}

// ink is the text colour that reads on fill: white on a dark #rrggbb,
// else near-black.
func ink(fill string) string {
	if len(fill) == 7 && fill[0] == '#' {
		if v, err := strconv.ParseUint(fill[1:], 16, 32); err == nil {
			r, g, b := float64(v>>16&0xff), float64(v>>8&0xff), float64(v&0xff)
			if 0.299*r+0.587*g+0.114*b < 140 {
				return "#ffffff"
			}
		}
	}
	return "#1d2430"
}
