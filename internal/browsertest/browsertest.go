// Package browsertest renders Mandate's self-contained HTML pages (the
// cluster report, the simulation's outcome) in a real headless Chromium for
// their tests: Debian's chromium, installed through hack/chromium.sh when
// it is missing. CheckCharts reads the rendered DOM for what a person
// could not read off the charts (charts.js); Screenshot keeps a picture
// of the page for a person to look at.
package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/test/envtest"
)

// Chromium finds chromium, installing it through the repository's
// hack/chromium.sh when it is missing; the test fails, never skips, when
// that fails.
func Chromium(t testing.TB) string {
	t.Helper()
	if path, err := exec.LookPath("chromium"); err == nil {
		return path
	}
	out, err := exec.Command(filepath.Join(envtest.RepoRoot(t), "hack", "chromium.sh")).CombinedOutput()
	require.NoError(t, err, "chromium is missing and hack/chromium.sh could not install it: %s", out)
	path, err := exec.LookPath("chromium")
	require.NoError(t, err, "hack/chromium.sh ran but chromium is not on PATH")
	return path
}

// Headless runs chromium on page (a file) with a fresh profile and extra
// flags (--dump-dom, --screenshot=FILE) and returns what it prints.
func Headless(t testing.TB, bin, page string, extra ...string) []byte {
	t.Helper()
	return run(t, bin, page, 1000, 1100, extra...)
}

func run(t testing.TB, bin, page string, width, height int, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(2*time.Minute))
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), fmt.Sprintf("--window-size=%d,%d", width, height)}, extra...)
	cmd := exec.CommandContext(ctx, bin, append(args, "file://"+page)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "chromium: %s", stderr.String())
	return out
}
