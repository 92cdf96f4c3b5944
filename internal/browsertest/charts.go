package browsertest

import (
	_ "embed"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/test/envtest"
)

//go:embed charts.js
var chartsJS string

// Charts is what charts.js found in a rendered page.
type Charts struct {
	Charts []Chart `json:"charts"`
	// Problems are what a person could not read: a series without a
	// legend entry, an axis without its unit, a bar without a visible
	// value, overlapping values, a table that does not sort.
	Problems []string `json:"problems"`
}

// Chart is one figure.chart of the page.
type Chart struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Axes are the axis titles as rendered; Units the units they carry.
	Axes   []string `json:"axes"`
	Units  []string `json:"units"`
	Legend []string `json:"legend"`
	Series []string `json:"series"`
	Bars   int      `json:"bars"`
	// Markers are guarantee and ceiling marks; Cells heat-map cells.
	Markers int `json:"markers"`
	Cells   int `json:"cells"`
	Ticks   int `json:"ticks"`
}

// Chart returns the chart with id; the test fails when there is none.
func (c Charts) Chart(t testing.TB, id string) Chart {
	t.Helper()
	for _, ch := range c.Charts {
		if ch.ID == id {
			return ch
		}
	}
	require.Failf(t, "no chart", "the page has no chart %q", id)
	return Chart{}
}

var checkRe = regexp.MustCompile(`(?s)<pre id="mandate-chart-check">(.*?)</pre>`)

// CheckCharts renders page (a file) in chromium with charts.js run after
// it (on a copy: the page itself carries no test code) and returns what
// it found, with the rendered DOM.
func CheckCharts(t testing.TB, bin, page string) (Charts, string) {
	t.Helper()
	src, err := os.ReadFile(page)
	require.NoError(t, err)
	body := string(src)
	i := strings.LastIndex(body, "</body>")
	require.GreaterOrEqual(t, i, 0, "the page has no </body>")
	checked := filepath.Join(t.TempDir(), "checked-"+filepath.Base(page))
	require.NoError(t, os.WriteFile(checked, []byte(body[:i]+"<script>"+chartsJS+"</script>"+body[i:]), 0o600))
	dom := string(Headless(t, bin, checked, "--dump-dom"))
	m := checkRe.FindStringSubmatch(dom)
	require.NotNil(t, m, "charts.js wrote no findings: it failed in the page")
	var c Charts
	require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(m[1])), &c), "%.300s", m[1])
	return c, dom
}

// UpdateScreenshotsEnv, set to 1, makes Screenshot also write docs/img/NAME
// for the README.
const UpdateScreenshotsEnv = "MANDATE_UPDATE_SCREENSHOTS"

// Screenshot renders page (a file) 1000 pixels wide and height tall into
// the test's artifact directory (kept under -outputdir with go test
// -artifacts) as name, and with MANDATE_UPDATE_SCREENSHOTS=1 into
// docs/img/name too; it returns the artifact's path.
func Screenshot(t *testing.T, bin, page, name string, height int) string {
	t.Helper()
	shot := filepath.Join(t.ArtifactDir(), name)
	run(t, bin, page, 1000, height, "--hide-scrollbars", "--screenshot="+shot)
	t.Logf("screenshot: %s", shot)
	if os.Getenv(UpdateScreenshotsEnv) == "1" {
		data, err := os.ReadFile(shot)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(envtest.RepoRoot(t), "docs", "img", name), data, 0o644)) //nolint:gosec // a picture for the README
	}
	return shot
}
