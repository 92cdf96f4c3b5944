package browsertest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/internal/browsertest"
	"github.com/mandate-dev/mandate/internal/chart"
)

// TestCheckChartsFindsWhatCannotBeRead: a readable bar chart passes; with
// a legend entry, a bar's value, the axis' unit or a hover title taken
// out, a wrong value, or two values on one spot, CheckCharts names the
// fault.
func TestCheckChartsFindsWhatCannotBeRead(t *testing.T) {
	bin := browsertest.Chromium(t)
	good := string(chart.BarChart{ID: "c", Category: "tenant", Value: chart.Axis{Title: "wait", Unit: "hours"}, Width: 600,
		Series: []chart.Series{{Key: "p50", Label: "p50", Short: "p50", Color: "#4e79a7"}, {Key: "p95", Label: "p95", Short: "p95", Color: "#f28e2b"}},
		Groups: []chart.Group{{Label: "a", Bars: []chart.Bar{{Series: "p50", Value: 1.25, Title: "a p50"}, {Series: "p95", Value: 1.25, Title: "a p95"}}}},
	}.HTML())
	for _, tc := range []struct {
		name        string
		old, new    string
		wantProblem string
	}{
		{name: "readable"},
		{name: "no legend entry", old: `<span class="key" data-series="p95">`, new: `<span class="key" data-series="other">`,
			wantProblem: "c: series p95 has no legend entry"},
		{name: "no value", old: `data-for="c-0-1"`, new: `data-for="elsewhere"`, wantProblem: "c: rect c-0-1 has no value written"},
		{name: "wrong value", old: `>1.2<`, new: `>2<`, wantProblem: "c: rect c-0-0: its value 1.25 is written 2"},
		{name: "no unit", old: `>wait (hours)<`, new: `>wait<`, wantProblem: "c: axis title wait does not show its unit hours"},
		{name: "no title", old: `<title>a p95</title>`, new: ``, wantProblem: "c: rect c-0-1 has no hover title"},
		{name: "values overlap", old: `<text class="value" data-for="c-0-1" x="`, new: `<text class="value" data-for="c-0-1" dy="-16" x="`,
			wantProblem: "overlap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := good
			if tc.old != "" {
				require.Contains(t, page, tc.old)
				page = strings.Replace(page, tc.old, tc.new, 1)
			}
			file := filepath.Join(t.TempDir(), "page.html")
			require.NoError(t, os.WriteFile(file, []byte("<!DOCTYPE html><html><head><style>"+string(chart.CSS)+
				"</style></head><body>"+page+"</body></html>"), 0o600))
			found, _ := browsertest.CheckCharts(t, bin, file)
			if tc.wantProblem == "" {
				assert.Empty(t, found.Problems)
				assert.Equal(t, 2, found.Chart(t, "c").Bars)
				return
			}
			assert.NotEmpty(t, found.Problems)
			assert.True(t, strings.Contains(strings.Join(found.Problems, "\n"), tc.wantProblem), "want %q in %q", tc.wantProblem, found.Problems)
		})
	}
}
