package chart

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mandate-dev/mandate/test/chartqueries"
	"github.com/mandate-dev/mandate/test/envtest"

	// Register every metric mandate serve registers in controller-runtime's
	// registry: the app package is serve's composition root and links
	// every package that exports one.
	_ "github.com/mandate-dev/mandate/cmd/mandate/app"
)

// TestDashboard: with grafana.dashboard.enabled the chart ships
// dashboards/mandate.json in a ConfigMap Grafana's sidecar picks up; the
// JSON parses, every panel queries something, and every metric its
// queries name is one Mandate registers, so renaming a metric breaks this
// test rather than the dashboard.
func TestDashboard(t *testing.T) {
	objs := render(t, release, namespace, "--set", "grafana.dashboard.enabled=true",
		"--set", "grafana.dashboard.annotations.grafana_folder=Mandate")
	cm := typed[corev1.ConfigMap](t, find(t, objs, "ConfigMap", fullname+"-dashboard"))
	assert.Equal(t, "1", cm.Labels["grafana_dashboard"])
	assert.Equal(t, "Mandate", cm.Annotations["grafana_folder"])
	assert.Equal(t, namespace, cm.Namespace)
	file, err := os.ReadFile(filepath.Join(envtest.RepoRoot(t), chartDir, "dashboards", "mandate.json"))
	require.NoError(t, err)
	require.Equal(t, string(file), cm.Data["mandate.json"], "the ConfigMap carries the dashboard file as is")

	var dash struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(file, &dash), "dashboards/mandate.json")
	assert.NotEmpty(t, dash.Title)
	assert.NotEmpty(t, dash.UID)
	for _, p := range dash.Panels {
		if p.Type != "row" {
			assert.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		}
	}
	queries, err := chartqueries.DashboardQueries(file)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, q := range queries {
		found, err := chartqueries.Metrics(q.Expr)
		if assert.NoError(t, err, q.Source) {
			assert.NotEmpty(t, found, "%s: query %q names no metric", q.Source, q.Expr)
		}
		for _, n := range found {
			assert.True(t, strings.HasPrefix(n, "mandate_"), "%s: query %q names %s, not a Mandate metric", q.Source, q.Expr, n)
			names[n] = true
		}
	}
	for _, want := range []string{"mandate_admission_duration_seconds_bucket", "mandate_violations_total",
		"mandate_evaluation_errors_total", "mandate_bundle_active_revision", "mandate_bundle_activations_total", "mandate_cache_synced",
		"mandate_idle_gpus", "mandate_stranded_gpus", "mandate_blocked_gpus", "mandate_pending_workloads", "mandate_tenant_gpus"} {
		assert.True(t, names[want], "the dashboard charts %s", want)
	}

	t.Run("off by default", func(t *testing.T) {
		for _, o := range render(t, release, namespace) {
			assert.NotEqual(t, "ConfigMap", o.GetKind(), "no ConfigMap by default: %s", key(o))
		}
	})
}

// TestChartQueries: every PromQL expression the chart ships, the
// PrometheusRule's alerts and the dashboard's queries (Grafana's variables
// substituted), parses with Prometheus' parser and names only metrics
// mandate serve registers. test/e2e's TestObservability checks the same
// names against a scrape of a running serve.
func TestChartQueries(t *testing.T) {
	queries, err := chartqueries.Load(context.Background(), envtest.RepoRoot(t))
	require.NoError(t, err)
	alerts := 0
	for _, q := range queries {
		if strings.HasPrefix(q.Source, "alert ") {
			alerts++
		}
		names, err := chartqueries.Metrics(q.Expr)
		if !assert.NoError(t, err, q.Source) {
			continue
		}
		assert.NotEmpty(t, names, "%s: %q names no metric", q.Source, q.Expr)
		for _, n := range names {
			assert.True(t, registered(n), "%s: %q names %s, which mandate serve does not register", q.Source, q.Expr, n)
		}
	}
	assert.Equal(t, 4, alerts, "the PrometheusRule's alerts are all read")

	t.Run("a query that does not parse or names an unknown metric is found", func(t *testing.T) {
		_, err := chartqueries.Metrics(`sum(rate(mandate_decisions_total[5m])`)
		assert.Error(t, err, "unbalanced parenthesis")
		_, err = chartqueries.Metrics(`rate(mandate_decisions_total[$__rate_interval])`)
		assert.Error(t, err, "a Grafana variable left in place")
		_, err = chartqueries.Metrics(`sum(rate({__name__=~"mandate_.*"}[5m]))`)
		assert.Error(t, err, "no metric named")
		assert.False(t, registered("mandate_no_such_metric"))
		assert.False(t, registered("mandate_idle_gpu"))
		assert.False(t, registered("mandate_cache_synced_count"), "a gauge has no _count series")
		assert.True(t, registered("mandate_admission_duration_seconds_bucket"))
		_, err = chartqueries.Substitute(`rate(x[$undeclared])`, nil)
		assert.Error(t, err, "a variable the dashboard does not declare")
		got, err := chartqueries.Substitute(`rate(x{namespace="$namespace"}[${__rate_interval}])`, []string{"namespace"})
		require.NoError(t, err)
		assert.Equal(t, `rate(x{namespace="value"}[1m])`, got)
	})
}

// registered says whether a metric called name, or the histogram or
// summary whose series it is (name_bucket, name_count, name_sum), is
// registered in controller-runtime's registry: registering a probe of that
// name fails exactly when it is. A suffix counts only when the base is not
// a family of another type among those the registry gathers now (a vector
// without series is not gathered; TestObservability's scrape then decides).
func registered(name string) bool {
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && registered(base) {
			if typ, gathered := gatheredType(base); !gathered ||
				typ == dto.MetricType_HISTOGRAM || (typ == dto.MetricType_SUMMARY && suffix != "_bucket") {
				return true
			}
		}
	}
	probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "probe of the dashboard test"})
	if err := metrics.Registry.Register(probe); err != nil {
		return true
	}
	metrics.Registry.Unregister(probe)
	return false
}

// gatheredType is the type of the family called name in what
// controller-runtime's registry gathers now.
func gatheredType(name string) (dto.MetricType, bool) {
	families, _ := metrics.Registry.Gather()
	for _, mf := range families {
		if mf.GetName() == name {
			return mf.GetType(), true
		}
	}
	return 0, false
}

// TestDecisionLogValues: the decisionLog values become mandate serve's
// flags, and the schema bounds the sample rate.
func TestDecisionLogValues(t *testing.T) {
	objs := render(t, release, namespace, "--set", "decisionLog.sampleRate=0.05", "--set", "decisionLog.includeObject=true")
	args := typed[appsv1.Deployment](t, find(t, objs, "Deployment", fullname)).Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--decision-log=true", "--decision-log-sample-rate=0.05", "--decision-log-include-object=true"} {
		assert.Contains(t, args, want)
	}
	args = typed[appsv1.Deployment](t, find(t, render(t, release, namespace), "Deployment", fullname)).Spec.Template.Spec.Containers[0].Args
	assert.Contains(t, args, "--decision-log-sample-rate=1", "every decision by default")
	assert.Contains(t, args, "--decision-log-include-object=false", "no objects by default")

	for _, bad := range []string{"decisionLog.sampleRate=2", "decisionLog.sampleRate=-1", "decisionLog.sampleRate=1.5", "decisionLog.sampleRate=often"} {
		out, err := helm(t, "template", release, chartDir, "--namespace", namespace, "--set", bad)
		require.Error(t, err, "helm template --set %s", bad)
		assert.Contains(t, out, "/decisionLog/sampleRate")
	}
	out, err := helm(t, "template", release, chartDir, "--namespace", namespace, "--set", "grafana.dashboard.enable=true")
	require.Error(t, err)
	assert.Contains(t, out, "additional properties 'enable' not allowed")
}
