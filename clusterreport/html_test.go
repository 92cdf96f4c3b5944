package clusterreport_test

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/clusterreport"
	"github.com/mandate-dev/mandate/internal/browsertest"
)

// TestHTMLRendersInChromium: the report page, rendered by a real browser.
// Every chart passes browsertest's checks (axis titles with units, a
// legend entry per series, a visible value and a hover title on every
// bar and marker, every heat-map cell named, tables that sort); a chart
// per GPU resource with one stacked bar per tenant row (used, idle and
// blocked segments, guarantee and ceiling marks); one heat-map cell per
// domain (the unhealthy one marked); one row per blocked workload. The
// screenshot (docs/img/report.png with MANDATE_UPDATE_SCREENSHOTS=1)
// shows the blocked-demand colour. Nothing is fetched: the page has no
// URL but its own.
func TestHTMLRendersInChromium(t *testing.T) {
	bin := browsertest.Chromium(t)
	rep := fixtureReport(t)
	var page bytes.Buffer
	require.NoError(t, clusterreport.WriteHTML(&page, rep))
	html := page.String()
	assert.NotRegexp(t, `(src|href)=|@import|url\(`, html, "self-contained: nothing to fetch")
	file := filepath.Join(t.TempDir(), "report.html")
	require.NoError(t, os.WriteFile(file, page.Bytes(), 0o600))

	found, dom := browsertest.CheckCharts(t, bin, file)
	assert.Empty(t, found.Problems, "what a person could not read")
	resources := map[string]bool{}
	for _, r := range rep.Tenants {
		resources[r.ResourceName()] = true
	}
	bars, markers := 0, 0
	for _, c := range found.Charts {
		if c.Kind == "stack" {
			bars += c.Bars
			markers += c.Markers
			assert.Len(t, c.Units, 1, c.ID)
			assert.True(t, resources[c.Units[0]], "%s: the axis counts a resource, not %q", c.ID, c.Units[0])
			delete(resources, c.Units[0])
		}
	}
	assert.Empty(t, resources, "a chart per GPU resource")
	segments := 0
	for _, r := range rep.Tenants {
		for _, n := range []int{r.NonPreemptible, r.Used - r.NonPreemptible, r.IdleInGuarantee, r.PendingGPUs} {
			if n > 0 {
				segments++
			}
		}
	}
	assert.Equal(t, segments, bars, "a bar segment per used, idle and blocked amount")
	guarantees := countTenants(rep, func(r clusterreport.TenantRow) bool { return r.Guaranteed >= 0 })
	ceilings := countTenants(rep, func(r clusterreport.TenantRow) bool { return r.Ceiling >= 0 })
	assert.Equal(t, guarantees+ceilings, markers)
	assert.Equal(t, len(rep.Domains), found.Chart(t, "heatmap").Cells)

	count := func(re string) int { return len(regexp.MustCompile(re).FindAllString(dom, -1)) }
	assert.Contains(t, dom, rep.Headline)
	assert.Equal(t, len(rep.Tenants), count(`<g class="row tenant"`))
	assert.Equal(t, countTenants(rep, func(r clusterreport.TenantRow) bool { return r.PendingGPUs > 0 }), count(`<rect class="bar pending"`))
	assert.Equal(t, guarantees, count(`<rect class="marker guarantee"`))
	assert.Equal(t, ceilings, count(`<rect class="marker ceiling"`))
	assert.Equal(t, len(rep.Domains), count(`<g class="domain"`))
	assert.Equal(t, 1, count(`<rect class="cell alert"`), "the GB200 clique is unhealthy")
	assert.Contains(t, dom, ">zone-c/s3/b9/b9-c0</text>", "the heat map names its cliques")
	assert.Equal(t, len(rep.Blocked), count(`<tr class="blocked">`))
	assert.Contains(t, dom, "QUOTA_CEILING_BUSY")
	assert.Contains(t, dom, `id="stranded">30<`)
	assert.Contains(t, dom, `>guarantee 96</tspan>`, "research-llm's guarantee is written beside its bar")

	shot := browsertest.Screenshot(t, bin, file, "report.png", 1500)
	f, err := os.Open(shot)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	b := img.Bounds()
	require.Equal(t, 1000, b.Dx())
	pending := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r>>8 == 0xe8 && g>>8 == 0xa0 && bl>>8 == 0x9a {
				pending++
			}
		}
	}
	assert.Greater(t, pending, 1000, "the blocked-demand bars are drawn")
}

func countTenants(r *clusterreport.Report, ok func(clusterreport.TenantRow) bool) int {
	n := 0
	for _, t := range r.Tenants {
		if ok(t) {
			n++
		}
	}
	return n
}
