package chart

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/test/chartqueries"
	"github.com/mandate-dev/mandate/test/envtest"
)

const (
	promtoolBinary = "bin/k8s/promtool"
	// alertTests are the promtool unit tests; each names rules.yaml, which
	// the test renders beside them.
	alertTests    = "testdata/alerts"
	ruleFileName  = "rules.yaml"
	promtoolHowTo = "run `make envtest-assets` (or `hack/envtest-assets.sh promtool`) from the repository root"
)

// TestAlertRules: the chart's PrometheusRule, rendered with default values,
// passes `promtool check rules` and the promtool unit tests in
// testdata/alerts, which hold for every alert a case where a synthetic
// series makes it fire with its labels and annotations and one where it
// stays silent; and an alert whose expression is broken fails them.
func TestAlertRules(t *testing.T) {
	root := envtest.RepoRoot(t)
	ctx := context.Background()
	file, err := chartqueries.RuleFile(ctx, root)
	require.NoError(t, err)
	rules, err := chartqueries.ParseRules(file)
	require.NoError(t, err)
	alerts := rules.Alerts()
	require.NotEmpty(t, alerts)

	tests, err := filepath.Glob(filepath.Join(alertTests, "*.test.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, tests, "no promtool tests in %s", alertTests)

	t.Run("every alert fires and stays silent in a case", func(t *testing.T) {
		fires, silent := map[string]bool{}, map[string]bool{}
		for _, path := range tests {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			var f struct {
				Tests []struct {
					AlertRuleTest []struct {
						Alertname string `json:"alertname"`
						ExpAlerts []any  `json:"exp_alerts"`
					} `json:"alert_rule_test"`
				} `json:"tests"`
			}
			require.NoError(t, yaml.Unmarshal(data, &f), path)
			for _, tc := range f.Tests {
				for _, a := range tc.AlertRuleTest {
					assert.Contains(t, alerts, a.Alertname, "%s tests an alert the chart does not have", path)
					if len(a.ExpAlerts) > 0 {
						fires[a.Alertname] = true
					} else {
						silent[a.Alertname] = true
					}
				}
			}
		}
		for _, a := range alerts {
			assert.True(t, fires[a], "no case where %s fires", a)
			assert.True(t, silent[a], "no case where %s stays silent", a)
		}
	})

	t.Run("promtool", func(t *testing.T) {
		dir := alertTestDir(t, tests, file)
		out, err := promtool(t, dir, "check", "rules", ruleFileName)
		require.NoError(t, err, "promtool check rules:\n%s", out)
		assert.Contains(t, out, "SUCCESS: "+strconv.Itoa(len(alerts))+" rules found")
		out, err = promtool(t, dir, append([]string{"test", "rules"}, testNames(tests)...)...)
		require.NoError(t, err, "promtool test rules:\n%s", out)
		t.Logf("promtool test rules:\n%s", out)
	})

	// Each alert's expression broken two ways in a copy of the rule file:
	// a syntax error fails the rule check and the tests; the metrics
	// renamed (an expression that parses but never matches) fails the
	// alert's firing case.
	for _, alert := range alerts {
		t.Run("broken "+alert, func(t *testing.T) {
			for _, tc := range []struct {
				name      string
				mutate    func(string) string
				wantCheck bool
			}{
				{"syntax", func(e string) string { return e + " )" }, false},
				{"renamed metrics", func(e string) string { return strings.ReplaceAll(e, "mandate_", "mandate_renamed_") }, true},
			} {
				broken := mutateAlert(t, file, alert, tc.mutate)
				dir := alertTestDir(t, tests, broken)
				out, err := promtool(t, dir, "check", "rules", ruleFileName)
				if tc.wantCheck {
					require.NoError(t, err, "%s: promtool check rules:\n%s", tc.name, out)
				} else {
					require.Error(t, err, "%s: promtool check rules passes a broken expression:\n%s", tc.name, out)
				}
				out, err = promtool(t, dir, append([]string{"test", "rules"}, testNames(tests)...)...)
				require.Error(t, err, "%s: promtool test rules passes with %s broken:\n%s", tc.name, alert, out)
				if tc.wantCheck {
					assert.Contains(t, out, "alertname: "+alert, "%s: the failure names the alert", tc.name)
				}
			}
		})
	}
}

// mutateAlert returns the rule file with alert's expression replaced by
// mutate's result.
func mutateAlert(t *testing.T, file []byte, alert string, mutate func(string) string) []byte {
	t.Helper()
	rules, err := chartqueries.ParseRules(file)
	require.NoError(t, err)
	found := false
	for g := range rules.Groups {
		for r := range rules.Groups[g].Rules {
			if rule := &rules.Groups[g].Rules[r]; rule.Alert == alert {
				rule.Expr = mutate(rule.Expr)
				found = true
			}
		}
	}
	require.True(t, found, "no alert %s", alert)
	out, err := yaml.Marshal(rules)
	require.NoError(t, err)
	return out
}

// alertTestDir is a temporary directory with the promtool tests and the
// rule file they name.
func alertTestDir(t *testing.T, tests []string, ruleFile []byte) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, ruleFileName), ruleFile, 0o600))
	for _, path := range tests {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(path)), data, 0o600))
	}
	return dir
}

func testNames(tests []string) []string {
	out := make([]string, len(tests))
	for i, path := range tests {
		out[i] = filepath.Base(path)
	}
	return out
}

// promtool runs the pinned promtool in dir and returns its combined output.
func promtool(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	bin := filepath.Join(envtest.RepoRoot(t), promtoolBinary)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("promtool not found at %s: %s", bin, promtoolHowTo)
	}
	ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	return buf.String(), err
}
