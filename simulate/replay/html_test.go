package replay

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/internal/browsertest"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/policies"
)

// readmeOutcome is the README's example: examples/simulate/trace.jsonl on
// examples/cluster.yaml, the embedded policies against a candidate that
// lowers research-llm's ceiling from 256 to 128 GPUs, with
// --fail-if 'wait.p95[research-llm] > +20%' (it holds).
func readmeOutcome(t *testing.T, candidate bool, failIf ...string) *Outcome {
	t.Helper()
	jobs, err := ReadTraceFile("../../examples/simulate/trace.jsonl")
	require.NoError(t, err)
	inv, err := inventory.ReadSnapshot("../../examples/cluster.yaml")
	require.NoError(t, err)
	supply, err := FromSnapshot(inv.Nodes, inv.Namespaces)
	require.NoError(t, err)
	run := func(ev *evaluator.Evaluator) *Report {
		r, err := Run(context.Background(), jobs, supply, Options{Decider: ev, Model: ev.Model(), Revision: ev.Revision()})
		require.NoError(t, err)
		return r
	}
	o := &Outcome{Baseline: run(embedded(t))}
	if candidate {
		o.Candidate = run(lowerCeiling(t))
		o.Compare()
	}
	var checks []FailIf
	for _, text := range failIf {
		f, err := ParseFailIf(text)
		require.NoError(t, err)
		checks = append(checks, f)
	}
	require.NoError(t, o.Check(checks))
	return o
}

// lowerCeiling is the embedded policies with research-llm's ceiling at
// 128 GPUs, revision "dev".
func lowerCeiling(t *testing.T) *evaluator.Evaluator {
	t.Helper()
	files := fstest.MapFS{}
	require.NoError(t, fs.WalkDir(policies.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(policies.FS, path)
		files[path] = &fstest.MapFile{Data: data}
		return err
	}))
	model := files["mandate/model/data.json"]
	require.NotNil(t, model)
	edited := strings.Replace(string(model.Data), `"guaranteed": 96, "ceiling": 256`, `"guaranteed": 96, "ceiling": 128`, 1)
	require.NotEqual(t, string(model.Data), edited, "research-llm's ceiling is where the README says")
	model.Data = []byte(edited)
	p, err := evaluator.LoadFS(files, "dev")
	require.NoError(t, err)
	ev, err := evaluator.New(context.Background(), p, evaluator.Options{})
	require.NoError(t, err)
	return ev
}

func writePage(t *testing.T, o *Outcome) string {
	t.Helper()
	var page bytes.Buffer
	require.NoError(t, WriteHTML(&page, o))
	assert.NotRegexp(t, `(src|href)=|@import|url\(`, page.String(), "self-contained: nothing to fetch")
	file := filepath.Join(t.TempDir(), "simulate.html")
	require.NoError(t, os.WriteFile(file, page.Bytes(), 0o600))
	return file
}

func rules(r *Report) map[string]bool {
	m := map[string]bool{}
	for _, t := range r.Tenants {
		for c := range t.DeniedBy {
			m[c] = true
		}
	}
	return m
}

// TestHTMLRendersInChromium: the README's comparison, rendered by a real
// browser. Every chart passes browsertest's checks (axis titles with
// units, a legend entry per series, a visible value and a hover title per
// bar, tables that sort); the allocation is drawn per revision on the same
// hours and GPUs; per tenant p50, p95 and max of both revisions; per rule
// the denials of both; the changes table marks the one cell the held
// --fail-if read. The screenshot is written for a person to look at
// (docs/img/simulate.png with MANDATE_UPDATE_SCREENSHOTS=1).
func TestHTMLRendersInChromium(t *testing.T) {
	bin := browsertest.Chromium(t)
	o := readmeOutcome(t, true, "wait.p95[research-llm] > +20%")
	require.Len(t, o.Held, 1, "the README's check holds")
	file := writePage(t, o)

	found, dom := browsertest.CheckCharts(t, bin, file)
	assert.Empty(t, found.Problems, "what a person could not read")
	for _, id := range []string{"alloc-baseline", "alloc-candidate"} {
		c := found.Chart(t, id)
		assert.Equal(t, []string{"simulated time (hours)", "allocated (GPUs)"}, sortedAxes(c.Axes), id)
		assert.Subset(t, c.Series, []string{"research-llm", "product", "capacity"}, id)
	}
	tenants := len(tenantNames(revisions(o)))
	waits := found.Chart(t, "waits")
	assert.Equal(t, 3*2*tenants, waits.Bars, "p50, p95 and max of both revisions per tenant")
	assert.Contains(t, waits.Axes, "wait (hours)")
	assert.Len(t, waits.Legend, 6)
	denials := found.Chart(t, "denials")
	all := rules(o.Baseline)
	for c := range rules(o.Candidate) {
		all[c] = true
	}
	assert.Equal(t, 2*len(all), denials.Bars, "both revisions per rule")
	assert.Contains(t, denials.Axes, "denied (requests)")
	assert.Contains(t, dom, "QUOTA_EXCEEDS_CEILING")

	count := func(re string) int { return len(regexp.MustCompile(re).FindAllString(dom, -1)) }
	assert.Equal(t, 1, count(`<td class="n fire"`), "one cell read by the held check")
	assert.Regexp(t, `<tr class="fire"><td class="">research-llm</td>(<td[^>]*>[^<]*</td>){5}<td class="n fire" data-v="11400">\+3\.2h</td>`, dom,
		"research-llm's wait p95 change")
	assert.Contains(t, dom, "fail-if held: wait.p95[research-llm] &gt; +20%: 12000 → 23400 (+95.0%)")
	assert.Equal(t, 4, count(`<table class="data sortable"`), "changes, tenants of each revision, cluster: HTML tables")
	assert.NotContains(t, dom, "<pre>", "not preformatted text")

	browsertest.Screenshot(t, bin, file, "simulate.png", 1900)
}

// TestHTMLBaselineOnly: without a candidate, one allocation chart, one
// bar per percentile, and a held check on the baseline marks its cell in
// the baseline's table.
func TestHTMLBaselineOnly(t *testing.T) {
	bin := browsertest.Chromium(t)
	o := readmeOutcome(t, false, "denied[research-vision] > 0")
	require.Len(t, o.Held, 1)
	found, dom := browsertest.CheckCharts(t, bin, writePage(t, o))
	assert.Empty(t, found.Problems, "what a person could not read")
	found.Chart(t, "alloc-baseline")
	assert.NotContains(t, dom, `id="alloc-candidate"`)
	assert.Equal(t, 3*len(o.Baseline.Tenants), found.Chart(t, "waits").Bars)
	assert.Equal(t, len(rules(o.Baseline)), found.Chart(t, "denials").Bars)
	assert.Regexp(t, `<tr class="fire"><td class="">research-vision</td><td[^>]*>3</td><td[^>]*>2</td><td class="n fire" data-v="1">1</td>`, dom)
}

// TestHTMLMarksEveryHeldCheck: a held check on the guaranteed classes
// marks their row of the changes table, one on the cluster its change in
// the cluster table; a check that does not hold marks nothing; every
// --fail-if tenant metric is a column of the tables.
func TestHTMLMarksEveryHeldCheck(t *testing.T) {
	o := readmeOutcome(t, true, "wait.p95[guaranteed] >= 0", "stranded_gpu_hours > +1", "denied[product] > 5")
	require.Len(t, o.Held, 2, "the third does not hold")
	var page bytes.Buffer
	require.NoError(t, WriteHTML(&page, o))
	html := page.String()
	assert.Equal(t, 2, strings.Count(html, `<td class="n fire"`), "one cell per held check")
	assert.Regexp(t, `<tfoot><tr class="fire"><td class="">guaranteed \(non-preemptible\)</td>(<td[^>]*>[^<]*</td>){5}<td class="n fire"`, html)
	assert.Regexp(t, `<tr class="fire"><td class="">stranded GPU-h</td><td[^>]*>[^<]*</td><td[^>]*>[^<]*</td><td class="n fire"`, html)

	var columns []string
	for _, c := range metricColumns {
		columns = append(columns, c.Metric)
	}
	for m := range tenantMetrics {
		assert.Contains(t, columns, m, "every --fail-if tenant metric has its column")
	}
}

func sortedAxes(axes []string) []string {
	out := append([]string(nil), axes...)
	if len(out) == 2 && strings.HasPrefix(out[0], "allocated") {
		out[0], out[1] = out[1], out[0]
	}
	return out
}
