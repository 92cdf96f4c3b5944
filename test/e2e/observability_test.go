package e2e

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/buildinfo"
	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/decisionlog"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/test/chartqueries"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/webhook"
)

// TestObservability creates admitted and denied workloads of every kind
// through the real API server, then checks what an operator sees: the
// decision log has exactly one line per decision, whose id is the one the
// API server's audit event recorded for that request; /metrics has the
// admission histogram by operation, kind and result, the decisions and the
// violations by dimension and code, and the active revision; and every
// metric the chart's PrometheusRule and dashboard query is in that scrape,
// with the labels they match on.
func TestObservability(t *testing.T) {
	var lines syncBuffer
	decisions, err := decisionlog.New(slog.NewJSONHandler(&lines, nil), decisionlog.DefaultOptions())
	require.NoError(t, err)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	s := startWith(t, startOptions{
		env:       []envtest.Option{envtest.WithAuditLog()},
		config:    func(c *config.Serve) { c.MetricsAddr = metricsAddr },
		decisions: decisions,
	})
	s.populate(t)
	ctx := context.Background()
	c := s.env.Client
	before := scrape(t, metricsAddr)

	// The authority metrics: serve's loop publishes the cluster report as
	// soon as a revision is active; the quotas come from the model.
	envtest.WaitFor(t, 30*time.Second, "the authority metrics", func() bool {
		return value(scrape(t, metricsAddr), "mandate_authority_report_timestamp_seconds", nil) > 0
	})
	authority := scrape(t, metricsAddr)
	assert.Equal(t, 256.0, value(authority, "mandate_tenant_gpus",
		map[string]string{"tenant": "research-llm", "resource": "nvidia.com/gpu", "measure": "ceiling"}))
	// A per-product ceiling has its own series beside the resource's.
	assert.Equal(t, 160.0, value(authority, "mandate_tenant_gpus",
		map[string]string{"tenant": "product", "resource": "nvidia.com/gpu", "product": "", "measure": "ceiling"}))
	assert.Equal(t, 32.0, value(authority, "mandate_tenant_gpus",
		map[string]string{"tenant": "product", "resource": "nvidia.com/gpu", "product": "NVIDIA-B200", "measure": "ceiling"}))
	for _, name := range []string{"mandate_idle_gpus", "mandate_stranded_gpus", "mandate_unhealthy_gpus", "mandate_blocked_gpus", "mandate_pending_workloads"} {
		assert.Contains(t, authority, name)
	}

	type workload struct {
		manifest string
		kind     string // the histogram's kind label
		dryRun   bool
	}
	admitted := []workload{{fixtures.VisionSweep, "Job", false}, {productPod, "Pod", false}, {llmFinetune, "PyTorchJob", false},
		{llmVolcanoJob, "VolcanoJob", false}, {productDistill, "Job", true}}
	denied := []workload{{fixtures.PlatformTooBig, "Job", false}, {scratchPod, "Pod", false}, {visionUrgent, "PyTorchJob", false},
		{llmVolcanoTooWide, "VolcanoJob", false}}

	// What each denial should count, from the same policy in-process.
	wantViolations := map[string]bool{}
	for _, w := range denied {
		d := s.decide(t, w.manifest)
		require.False(t, d.Allowed, "fixture must be denied")
		for _, v := range d.Violations {
			wantViolations[string(v.Dimension)+"/"+v.Code] = true
		}
	}
	stored := map[string]string{} // key → the stored object's policy revision
	for _, w := range admitted {
		obj := object(t, w.manifest)
		var opts []client.CreateOption
		if w.dryRun {
			opts = append(opts, client.DryRunAll)
		}
		require.NoError(t, c.Create(ctx, obj, opts...), "create %s %s", obj.GetKind(), obj.GetName())
		stored[objectKey(obj.GetKind(), obj.GetNamespace(), obj.GetName())] = obj.GetAnnotations()[review.AnnotationPolicyRevision]
	}
	for _, w := range denied {
		err := c.Create(ctx, object(t, w.manifest))
		require.True(t, apierrors.IsForbidden(err), "create: %v, want Forbidden", err)
	}
	// A pod of the admitted vit-sweep Job is admitted with its gang's
	// directives: an admission, not a decision.
	job := object(t, fixtures.VisionSweep)
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(job), job))
	pod := object(t, `
apiVersion: v1
kind: Pod
metadata: {name: vit-sweep-0, namespace: vision}
spec:
  restartPolicy: Never
  containers:
  - {name: train, image: vit, resources: {limits: {nvidia.com/gpu: "4"}}}
`)
	pod.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.GetName(), UID: job.GetUID(), Controller: ptr.To(true)}})
	require.NoError(t, c.Create(ctx, pod))

	// With reinvocationPolicy IfNeeded the API server calls /mutate again
	// when a later admission plugin changed the object (for pods, e.g. the
	// Priority plugin): Mandate decides again, and the line says so.
	all := decisionLines(t, lines.Bytes())
	allowedLines := 0
	for _, l := range all {
		if l["result"] == "allowed" {
			allowedLines++
		}
	}

	t.Run("one decision line per decision, with the audited decision id", func(t *testing.T) {
		got, again := map[string]map[string]any{}, map[string]map[string]any{}
		for _, l := range all {
			k := objectKey(l["kind"].(string), l["namespace"].(string), l["name"].(string))
			if l["dryRun"] == true {
				k += " (dry run)"
			}
			into := got
			if l["reinvocation"] == true {
				into = again
			}
			require.NotContains(t, into, k, "two decision lines for %s (reinvocation %v)", k, l["reinvocation"])
			into[k] = l
		}
		assert.Len(t, got, len(admitted)+len(denied), "first decision lines: %v", keysOf(got))
		assert.NotContains(t, got, objectKey("Pod", "vision", "vit-sweep-0"), "a gang's pod is no decision")
		assert.NotContains(t, again, objectKey("Pod", "vision", "vit-sweep-0"), "a gang's pod is no decision")
		for k, l := range again {
			first, ok := got[k]
			if assert.True(t, ok, "reinvocation of %s without a first decision", k) {
				assert.Equal(t, "allowed", first["result"], "only an admitted object is reinvoked: %s", k)
				assert.Equal(t, first["result"], l["result"], "the reinvocation of %s decides the same", k)
			}
		}
		t.Logf("%d decisions, %d of them reinvocations (%v)", len(all), len(again), keysOf(again))

		events := auditedDecisions(t, s.env, len(admitted)+len(denied))
		for k, ev := range events {
			l, ok := got[k]
			if !assert.True(t, ok, "no decision line for the audited %s", k) {
				continue
			}
			assert.Equal(t, ev.id, l["id"], "%s: decision id in the log and the audit event", k)
			assert.Equal(t, ev.revision, l["revision"], "%s: revision in the log and the audit event", k)
			wantResult := "allowed"
			if ev.code == http.StatusForbidden {
				wantResult = "denied"
			}
			assert.Equal(t, wantResult, l["result"], k)
			if rev, ok := stored[k]; ok && rev != "" {
				assert.Equal(t, rev, l["revision"], "%s: the stored object's %s", k, review.AnnotationPolicyRevision)
			}
		}
		assert.Len(t, events, len(got), "every decision line has an audited request")
		_, gangAudited := events[objectKey("Pod", "vision", "vit-sweep-0")]
		assert.False(t, gangAudited, "the gang's pod carries no decision id")
	})

	t.Run("metrics", func(t *testing.T) {
		after := scrape(t, metricsAddr)
		hist := "mandate_admission_duration_seconds"
		for _, w := range admitted {
			assert.Positive(t, delta(before, after, hist, map[string]string{"webhook": "mutate", "operation": "CREATE", "kind": w.kind, "result": "allowed"}),
				"histogram: allowed %s", w.kind)
		}
		for _, w := range denied {
			assert.Positive(t, delta(before, after, hist, map[string]string{"webhook": "mutate", "operation": "CREATE", "kind": w.kind, "result": "denied"}),
				"histogram: denied %s", w.kind)
		}
		assert.GreaterOrEqual(t, delta(before, after, hist, map[string]string{"webhook": "mutate", "kind": "Pod", "result": "allowed"}), 2.0,
			"the pod and the gang's pod are timed")
		assert.Equal(t, float64(len(all)), delta(before, after, "mandate_decisions_total", nil), "one decision line per counted decision")
		assert.Equal(t, float64(allowedLines), delta(before, after, "mandate_decisions_total", map[string]string{"webhook": "mutate", "result": "allowed"}))
		assert.Equal(t, float64(len(denied)), delta(before, after, "mandate_decisions_total", map[string]string{"webhook": "mutate", "result": "denied"}))
		assert.Zero(t, delta(before, after, "mandate_decisions_total", map[string]string{"webhook": "validate"}), "the validating webhook saw them marked")
		assert.NotEmpty(t, wantViolations)
		for dv := range wantViolations {
			dim, code, _ := strings.Cut(dv, "/")
			assert.Positive(t, delta(before, after, "mandate_violations_total", map[string]string{"dimension": dim, "code": code, "enforcement": "deny"}),
				"violations_total{dimension=%q,code=%q}", dim, code)
		}
		assert.Equal(t, 1.0, value(after, "mandate_bundle_active_revision", map[string]string{"revision": s.srv.Evaluator.Revision()}), "active revision")
		assert.Equal(t, 1.0, value(after, "mandate_cache_synced", nil), "cache synced")
		build := buildinfo.Get()
		assert.Equal(t, 1.0, value(after, buildinfo.MetricName, map[string]string{"version": build.Version, "commit": build.Commit,
			"go_version": build.GoVersion, "opa_version": build.OPAVersion}), "the build's facts")
		assert.Zero(t, delta(before, after, "mandate_evaluation_errors_total", nil))
		for _, name := range []string{"mandate_evaluation_errors_total", "mandate_bundle_activations_total"} {
			assert.Contains(t, after, name, "exported before anything fails")
		}
		t.Logf("decisions: %v allowed, %v denied; admission histogram, cumulative counts over all series: %s",
			delta(before, after, "mandate_decisions_total", map[string]string{"result": "allowed"}),
			delta(before, after, "mandate_decisions_total", map[string]string{"result": "denied"}), buckets(after, hist))
	})

	t.Run("the chart's alerts and dashboard query exported metrics", func(t *testing.T) {
		queries, err := chartqueries.Load(ctx, s.env.RepoRoot)
		require.NoError(t, err)
		exported := exportedSeries(scrape(t, metricsAddr))
		checked := 0
		for _, q := range queries {
			sels, err := chartqueries.Selectors(q.Expr)
			require.NoError(t, err, q.Source)
			for _, sel := range sels {
				n := sel.Metric
				if reason, ok := notYetObserved[n]; ok {
					assert.NotContains(t, exported, n, "%s is exported here: drop it from notYetObserved (%s)", n, reason)
					continue
				}
				checked++
				labels, ok := exported[n]
				if !assert.True(t, ok, "%s: %q names %s, which serve does not export", q.Source, q.Expr, n) {
					continue
				}
				for _, l := range sel.Labels {
					assert.True(t, labels[l], "%s: %q matches %s on %s, a label it does not have", q.Source, q.Expr, n, l)
				}
			}
		}
		assert.Positive(t, checked)
	})
}

// notYetObserved are the metrics the chart queries that serve registers
// (test/chart's TestChartQueries checks that) but exports no series of
// until an event TestObservability does not cause, with that event.
var notYetObserved = map[string]string{
	"mandate_shadow_differences_total": "a shadow revision's decision differs from the active one; no shadow is configured here",
}

// exportedSeries are the series names a scrape holds, as PromQL selects
// them (a histogram's name_bucket, name_sum and name_count, a summary's
// name, name_sum and name_count, every other family's name), each with
// the label names its series carry (le on a histogram's buckets, quantile
// on a summary's).
func exportedSeries(families map[string]*dto.MetricFamily) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for name, mf := range families {
		if len(mf.GetMetric()) == 0 {
			continue
		}
		labels := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = true
			}
		}
		with := func(extra string) map[string]bool {
			l := maps.Clone(labels)
			l[extra] = true
			return l
		}
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = with("le"), labels, labels
		case dto.MetricType_SUMMARY:
			out[name], out[name+"_sum"], out[name+"_count"] = with("quantile"), labels, labels
		default:
			out[name] = labels
		}
	}
	return out
}

type auditEvent struct {
	id, revision string
	code         int
}

// auditedDecisions reads the audit log until it holds want decided
// creates and returns them by object ("(dry run)" appended for dry runs).
func auditedDecisions(t *testing.T, env *envtest.Env, want int) map[string]auditEvent {
	t.Helper()
	var out map[string]auditEvent
	envtest.WaitFor(t, 10*time.Second, fmt.Sprintf("%d decided creates in the audit log", want), func() bool {
		out = map[string]auditEvent{}
		events, err := env.AuditedCreates()
		require.NoError(t, err)
		for _, ev := range events {
			id, ok := ev.Annotations[webhook.MutatingWebhookName+"/"+webhook.AuditDecisionID]
			if !ok {
				continue
			}
			k := objectKey(auditKind(ev.ObjectRef.APIGroup, ev.ObjectRef.Resource), ev.ObjectRef.Namespace, ev.ObjectRef.Name)
			if strings.Contains(ev.RequestURI, "dryRun=All") {
				k += " (dry run)"
			}
			out[k] = auditEvent{id: id, revision: ev.Annotations[webhook.MutatingWebhookName+"/"+webhook.AuditPolicyRevision], code: ev.ResponseStatus.Code}
		}
		return len(out) >= want
	})
	return out
}

func auditKind(group, resource string) string {
	switch group + "/" + resource {
	case "/pods":
		return "Pod"
	case "kubeflow.org/pytorchjobs":
		return "PyTorchJob"
	}
	return "Job"
}

func objectKey(kind, namespace, name string) string { return kind + " " + namespace + "/" + name }

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func decisionLines(t *testing.T, raw []byte) []map[string]any {
	t.Helper()
	lines := fixtures.JSONLines(t, raw)
	for _, l := range lines {
		require.Equal(t, decisionlog.Name, l["logger"])
	}
	return lines
}

// scrape GETs /metrics and parses it.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

// value sums the samples of a family (a histogram's sample count) whose
// labels include want.
func value(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var sum float64
	mf, ok := families[name]
	if !ok {
		return 0
	}
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, lp := range m.GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

func delta(before, after map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	return value(after, name, want) - value(before, name, want)
}

// buckets prints the cumulative bucket counts of the mutating webhook's
// decided admissions, for the log.
func buckets(families map[string]*dto.MetricFamily, name string) string {
	counts := map[float64]uint64{}
	var bounds []float64
	for _, m := range families[name].GetMetric() {
		for _, b := range m.GetHistogram().GetBucket() {
			if _, ok := counts[b.GetUpperBound()]; !ok {
				bounds = append(bounds, b.GetUpperBound())
			}
			counts[b.GetUpperBound()] += b.GetCumulativeCount()
		}
	}
	var sb strings.Builder
	for _, b := range bounds {
		fmt.Fprintf(&sb, "le=%g:%d ", b, counts[b])
	}
	return sb.String()
}

// syncBuffer is a bytes.Buffer safe for the webhook's concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf.Bytes()...)
}
