package replay

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/internal/browsertest"
)

// TestHTMLRendersInChromium: the golden scenario side by side with itself,
// rendered by a real browser: per revision one allocation plot with a
// polygon per tenant, one wait bar triple per tenant and one denial bar
// per rule; the tables; nothing fetched.
func TestHTMLRendersInChromium(t *testing.T) {
	bin := browsertest.Chromium(t)
	ev := embedded(t)
	r, err := Run(context.Background(), goldenTrace, goldenSupply(), Options{Decider: ev, Model: ev.Model(),
		Revision: "golden", SampleEvery: 600, Until: 7200})
	require.NoError(t, err)
	o := &Outcome{Baseline: r, Candidate: r, FailIf: []string{"denied[research-vision] > 0 = 1"}}
	o.Compare()
	var page bytes.Buffer
	require.NoError(t, WriteHTML(&page, o))
	assert.NotRegexp(t, `(src|href)=|@import|url\(`, page.String(), "self-contained: nothing to fetch")
	file := filepath.Join(t.TempDir(), "simulate.html")
	require.NoError(t, os.WriteFile(file, page.Bytes(), 0o600))

	dom := string(browsertest.Headless(t, bin, file, "--dump-dom"))
	count := func(re string) int { return len(regexp.MustCompile(re).FindAllString(dom, -1)) }
	assert.Equal(t, 2, count(`<svg class="alloc"`))
	assert.Equal(t, 2*len(r.Tenants), count(`<polygon `), "a band per tenant per revision")
	assert.Equal(t, 2, count(`<svg class="waits"`))
	assert.Equal(t, 2*3*len(r.Tenants), count(`<rect x="150"`), "p50, p95 and max per tenant")
	assert.Equal(t, 2, count(`<rect x="220"`), "one rule (PRIORITY_NOT_ALLOWED) per revision")
	assert.Contains(t, dom, "PRIORITY_NOT_ALLOWED")
	assert.Contains(t, dom, "CHANGE (candidate - baseline)")
	assert.Contains(t, dom, "fail-if held: denied[research-vision] &gt; 0 = 1")
}
