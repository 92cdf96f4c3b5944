// Package chart draws the inline SVG charts of Mandate's self-contained
// HTML pages (the cluster report, the simulation's outcome) so that a
// person can read a number off them, on screen and on paper: horizontal
// bars (grouped, or stacked with markers), stacked areas over time and a
// heat map of named cells. Every chart is a <figure class="chart"> with a
// caption, a legend naming every series and an SVG plot whose value axes
// carry a title with the unit in parentheses and ticks; every bar and
// marker has its value written on or beside it and a hover <title> with
// the exact numbers. The DOM contract (classes figure.chart, .legend
// .key[data-series], text.axis-title[data-unit], .bar/.marker with an id
// and a .value[data-for=id]) is what the pages' browser tests check. The
// package also holds the pages' shared CSS (print included) and the small
// inline script that sorts tables.
package chart

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Series is one thing a chart draws, named once in its legend.
type Series struct {
	// Key identifies the series in the DOM (data-series); unique per chart.
	Key string
	// Label is the legend's name for it; Name, when set, its name in hover
	// texts (a legend label that carries a total reads badly there).
	Label, Name string
	// Short, when set, labels each of its bars in a grouped chart (p50,
	// p95, max); "" draws no per-bar label.
	Short string
	// Color fills its marks; Stroke, when set, outlines them.
	Color, Stroke string
	// Line draws its legend key as a thin bar (a marker, a line).
	Line bool
}

// Axis is a value axis: its title, its unit and its extent.
type Axis struct {
	Title string
	// Unit is written after the title, in parentheses.
	Unit string
	// Max is the axis' extent; 0 takes it from the data. Give two charts
	// the same Max to draw them on the same scale.
	Max float64
	// Whole keeps the ticks on whole numbers (counts).
	Whole bool
}

// label is the axis' title with its unit.
func (a Axis) label() string {
	if a.Unit == "" {
		return a.Title
	}
	return a.Title + " (" + a.Unit + ")"
}

// figure wraps a plot: the caption, the legend and the SVG.
func figure(kind, id, title string, series []Series, svg string) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<figure class="chart" data-kind="%s" id="%s">`, kind, esc(id))
	if title != "" {
		fmt.Fprintf(&b, `<figcaption>%s</figcaption>`, esc(title))
	}
	b.WriteString(legend(series))
	b.WriteString(svg)
	b.WriteString(`</figure>`)
	return template.HTML(b.String()) //nolint:gosec // every value is escaped above and in the plots
}

// legend names every series with its colour key. The keys are SVG, not
// CSS backgrounds, so that they print.
func legend(series []Series) string {
	var b strings.Builder
	b.WriteString(`<div class="legend">`)
	for _, s := range series {
		fmt.Fprintf(&b, `<span class="key" data-series="%s"><svg class="sw" width="14" height="12" viewBox="0 0 14 12">`, esc(s.Key))
		if s.Line {
			fmt.Fprintf(&b, `<rect x="5" y="0" width="3" height="12" fill="%s"/>`, esc(s.Color))
		} else {
			fmt.Fprintf(&b, `<rect x="0.5" y="0.5" width="13" height="11" fill="%s"%s/>`, esc(s.Color), stroke(s.Stroke))
		}
		fmt.Fprintf(&b, `</svg>%s</span>`, esc(s.Label))
	}
	b.WriteString(`</div>`)
	return b.String()
}

func (s Series) name() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Label
}

func stroke(c string) string {
	if c == "" {
		return ""
	}
	return fmt.Sprintf(` stroke="%s"`, esc(c))
}

// esc escapes text for HTML and SVG content and attributes.
func esc(s string) string { return template.HTMLEscapeString(s) }

// NiceMax is the end of the axis that holds max: its last tick.
func NiceMax(max float64, n int, whole bool) float64 {
	ts := Ticks(max, n, whole)
	return ts[len(ts)-1]
}

// Ticks are round values from 0 to at least max, about n of them; whole
// ones only when whole.
func Ticks(max float64, n int, whole bool) []float64 {
	if max <= 0 || math.IsNaN(max) || math.IsInf(max, 0) {
		max = 1
	}
	raw := max / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	// A step a quarter finer than n asks for is still round: 11 on about
	// 4 ticks ends at 12.5, not 15.
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw*0.75 {
			step = m * mag
			break
		}
	}
	if whole {
		step = math.Max(1, math.Round(step))
	}
	var ts []float64
	for i := 0; ; i++ {
		v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(i)*step, 'g', 12, 64), 64) // 0.6, not 0.6000000000000001
		ts = append(ts, v)
		if v >= max-step*1e-9 {
			break
		}
	}
	return ts
}

// Num writes a number without trailing zeros: 3, 3.5, 0.25; at most
// decimals digits after the point.
func Num(v float64, decimals int) string {
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// tickCount is about how many ticks fit along length pixels.
func tickCount(length float64) int { return int(math.Max(2, math.Min(8, length/90))) }

// textWidth estimates the width of text at size px in the pages' sans
// font, for layout only (the browser test measures the real one).
func textWidth(s string, size float64) float64 {
	return float64(len([]rune(s))) * size * 0.58
}

// svgOpen starts a plot of width × height.
func svgOpen(b *strings.Builder, width, height float64) {
	fmt.Fprintf(b, `<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s">`,
		Num(width, 1), Num(height, 1), Num(width, 1), Num(height, 1))
}

// xGrid draws the vertical grid lines of a horizontal value axis from x0
// to x0+w (max its NiceMax), from top to y: before the marks, under them.
func xGrid(b *strings.Builder, a Axis, max, x0, w, top, y float64) {
	for _, t := range Ticks(max, tickCount(w), a.Whole) {
		x := x0 + t/max*w
		fmt.Fprintf(b, `<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/>`, Num(x, 1), Num(top, 1), Num(x, 1), Num(y, 1))
	}
}

// xAxis draws a horizontal value axis at y from x0 to x0+w with its ticks
// and its title below; max is its NiceMax.
func xAxis(b *strings.Builder, a Axis, max, x0, w, y float64, format func(float64) string) {
	for _, t := range Ticks(max, tickCount(w), a.Whole) {
		x := x0 + t/max*w
		fmt.Fprintf(b, `<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`, Num(x, 1), Num(y+14, 1), esc(format(t)))
	}
	fmt.Fprintf(b, `<line class="axis" x1="%s" y1="%s" x2="%s" y2="%s"/>`, Num(x0, 1), Num(y, 1), Num(x0+w, 1), Num(y, 1))
	fmt.Fprintf(b, `<text class="axis-title x" data-unit="%s" x="%s" y="%s" text-anchor="middle">%s</text>`,
		esc(a.Unit), Num(x0+w/2, 1), Num(y+31, 1), esc(a.label()))
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
