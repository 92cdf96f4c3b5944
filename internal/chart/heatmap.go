package chart

import (
	"fmt"
	"html/template"
	"math"
	"strings"
)

// HeatMap is a grid of named cells (topology domains), each with its
// name and its value written in it and coloured by the caller.
type HeatMap struct {
	ID, Title string
	// Legend explains the colours; Unit says what the values count.
	Legend []Series
	Unit   string
	Cells  []Cell
	Width  float64
}

// Cell is one square of a HeatMap.
type Cell struct {
	Name, Value, Title string
	Fill               string
	// Alert outlines the cell in red (unhealthy).
	Alert bool
	Class string
	Data  map[string]string
}

// HTML draws the heat map.
func (c HeatMap) HTML() template.HTML {
	cw := 96.0
	for _, cl := range c.Cells {
		cw = math.Max(cw, math.Max(textWidth(cl.Name, 11), textWidth(cl.Value, 13))+14)
	}
	ch := 48.0
	perRow := max(1, int((c.Width+6)/(cw+6)))
	rows := (len(c.Cells) + perRow - 1) / perRow
	height := 20 + float64(rows)*(ch+6)
	var b strings.Builder
	svgOpen(&b, c.Width, height)
	fmt.Fprintf(&b, `<text class="axis-title unit" data-unit="%s" x="0" y="13">%s</text>`, esc(c.Unit), esc(c.Unit))
	for i, cl := range c.Cells {
		x, y := 2+float64(i%perRow)*(cw+6), 20+float64(i/perRow)*(ch+6)
		id := fmt.Sprintf("%s-%d", c.ID, i)
		fmt.Fprintf(&b, `<g class="%s"`, esc(cl.Class))
		for _, k := range sortedKeys(cl.Data) {
			fmt.Fprintf(&b, ` data-%s="%s"`, esc(k), esc(cl.Data[k]))
		}
		alert, cls := "", "cell"
		if cl.Alert {
			alert, cls = ` stroke="#c0392b" stroke-width="3"`, "cell alert"
		}
		fmt.Fprintf(&b, `><rect class="%s" id="%s" x="%s" y="%s" width="%s" height="%s" rx="3" fill="%s"%s><title>%s</title></rect>`,
			cls, esc(id), Num(x, 1), Num(y, 1), Num(cw, 1), Num(ch, 1), esc(cl.Fill), alert, esc(cl.Title))
		fmt.Fprintf(&b, `<text class="name" data-for="%s" x="%s" y="%s" text-anchor="middle" style="fill:%s">%s</text>`,
			esc(id), Num(x+cw/2, 1), Num(y+17, 1), ink(cl.Fill), esc(cl.Name))
		fmt.Fprintf(&b, `<text class="value big" data-for="%s" x="%s" y="%s" text-anchor="middle" style="fill:%s">%s</text></g>`,
			esc(id), Num(x+cw/2, 1), Num(y+36, 1), ink(cl.Fill), esc(cl.Value))
	}
	b.WriteString(`</svg>`)
	return figure("heatmap", c.ID, c.Title, c.Legend, b.String())
}
