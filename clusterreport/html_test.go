package clusterreport_test

import (
	"bytes"
	"flag"
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

var updateScreenshot = flag.Bool("update-screenshot", false, "write the screenshot to docs/img/report.png for the README")

// TestHTMLRendersInChromium: the report page, rendered by a real browser,
// has the headline, one stacked bar per tenant row with used, idle and
// blocked segments and guarantee and ceiling marks, one heat-map cell per
// domain (the unhealthy one marked), and one row per blocked workload; the
// screenshot shows the blocked-demand colour. Nothing is fetched: the page
// has no URL but its own.
func TestHTMLRendersInChromium(t *testing.T) {
	bin := browsertest.Chromium(t)
	rep := fixtureReport(t)
	var page bytes.Buffer
	require.NoError(t, clusterreport.WriteHTML(&page, rep))
	html := page.String()
	assert.NotRegexp(t, `(src|href)=|@import|url\(`, html, "self-contained: nothing to fetch")
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	require.NoError(t, os.WriteFile(file, page.Bytes(), 0o600))

	dom := string(browsertest.Headless(t, bin, file, "--dump-dom"))
	count := func(re string) int { return len(regexp.MustCompile(re).FindAllString(dom, -1)) }
	assert.Contains(t, dom, rep.Headline)
	assert.Equal(t, len(rep.Tenants), count(`<g class="tenant"`))
	assert.Positive(t, count(`<rect class="used (non)?preemptible"`))
	assert.Positive(t, count(`<rect class="idle"`))
	assert.Equal(t, countTenants(rep, func(r clusterreport.TenantRow) bool { return r.PendingGPUs > 0 }), count(`<rect class="pending"`))
	assert.Equal(t, countTenants(rep, func(r clusterreport.TenantRow) bool { return r.Guaranteed >= 0 }), count(`<rect class="guarantee"`))
	assert.Equal(t, countTenants(rep, func(r clusterreport.TenantRow) bool { return r.Ceiling >= 0 }), count(`<rect class="ceiling"`))
	assert.Equal(t, len(rep.Domains), count(`<g class="domain"`))
	assert.Equal(t, 1, count(`<rect class="cell unhealthy"`), "the GB200 clique is unhealthy")
	assert.Equal(t, len(rep.Blocked), count(`<tr class="blocked">`))
	assert.Contains(t, dom, "QUOTA_CEILING_BUSY")
	assert.Contains(t, dom, `id="stranded">30<`)

	shot := filepath.Join(dir, "report.png")
	browsertest.Headless(t, bin, file, "--screenshot="+shot)
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
	artifact := filepath.Join(os.TempDir(), "mandate-report.png")
	if data, err := os.ReadFile(shot); err == nil {
		_ = os.WriteFile(artifact, data, 0o644)
		t.Logf("screenshot: %s", artifact)
		if *updateScreenshot {
			require.NoError(t, os.WriteFile("../docs/img/report.png", data, 0o644))
		}
	}
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
