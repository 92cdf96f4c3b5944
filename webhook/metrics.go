package webhook

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/workload"
)

// Label values, precomputed so the request path does not build strings.
const (
	webhookMutate   = "mutate"
	webhookValidate = "validate"

	resultAllowed = "allowed"
	resultDenied  = "denied"
	resultError   = "error"

	reasonTimeout  = "timeout"
	reasonNoPolicy = "no_policy"
	reasonError    = "error"

	labelOther = "other"
)

// admissionBuckets span 0.5 ms to 5 s: a decision takes about a
// millisecond, and the webhooks' timeoutSeconds is 3.
var admissionBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5}

var (
	// admissions counts responses by webhook and outcome; controller-runtime
	// also records latency and in-flight requests per webhook path.
	admissions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mandate_admissions_total",
		Help: "Admission responses by webhook (mutate, validate) and outcome (allowed, denied, error) and HTTP code.",
	}, []string{"webhook", "outcome", "code"})
	admissionDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mandate_admission_duration_seconds",
		Help:    "Time from receiving an admission request to answering it, by webhook, operation, kind (Pod, Job, PyTorchJob, VolcanoJob, Namespace, other) and result (allowed, denied, error).",
		Buckets: admissionBuckets,
	}, []string{"webhook", "operation", "kind", "result"})
	decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mandate_decisions_total",
		Help: "Workloads decided by the authority model, by webhook and result (allowed, denied, error); pods of an already admitted gang are not decisions.",
	}, []string{"webhook", "result"})
	violationsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mandate_violations_total",
		Help: "Violations found by decisions, by dimension, violation code and enforcement (deny, warn, dryrun).",
	}, []string{"dimension", "code", "enforcement"})
	evaluationErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mandate_evaluation_errors_total",
		Help: "Decisions that failed, by reason: timeout (the evaluation deadline passed), no_policy (no revision active yet), error (anything else).",
	}, []string{"reason"})
)

func init() {
	metrics.Registry.MustRegister(admissions, admissionDuration, decisions, violationsTotal, evaluationErrors)
	// Known label values start at 0, so rate() sees the first event.
	for _, w := range []string{webhookMutate, webhookValidate} {
		for _, r := range []string{resultAllowed, resultDenied, resultError} {
			decisionCounters.get(decisionKey{w, r})
		}
	}
	for _, r := range []string{reasonTimeout, reasonNoPolicy, reasonError} {
		errorCounters.get(r)
	}
}

// children are the series of a metric vector already resolved, by their
// label values: the request path looks a series up without allocating
// (prometheus' WithLabelValues hashes and allocates its variadic labels
// every call), and resolves each once.
type children[K comparable, V any] struct {
	mu      sync.RWMutex
	m       map[K]V
	resolve func(K) V
}

func newChildren[K comparable, V any](resolve func(K) V) *children[K, V] {
	return &children[K, V]{m: map[K]V{}, resolve: resolve}
}

func (c *children[K, V]) get(k K) V {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok = c.m[k]; !ok {
		v = c.resolve(k)
		c.m[k] = v
	}
	return v
}

type durationKey struct{ webhook, operation, kind, result string }

type admissionKey struct {
	webhook, outcome string
	code             int32
}

type decisionKey struct{ webhook, result string }

type violationKey struct{ dimension, code, enforcement string }

var (
	durationObservers = newChildren(func(k durationKey) prometheus.Observer {
		return admissionDuration.WithLabelValues(k.webhook, k.operation, k.kind, k.result)
	})
	admissionCounters = newChildren(func(k admissionKey) prometheus.Counter {
		return admissions.WithLabelValues(k.webhook, k.outcome, codeLabel(k.code))
	})
	decisionCounters = newChildren(func(k decisionKey) prometheus.Counter {
		return decisions.WithLabelValues(k.webhook, k.result)
	})
	violationCounters = newChildren(func(k violationKey) prometheus.Counter {
		return violationsTotal.WithLabelValues(k.dimension, k.code, k.enforcement)
	})
	errorCounters = newChildren(func(reason string) prometheus.Counter {
		return evaluationErrors.WithLabelValues(reason)
	})
)

// observe counts resp, records how long the request took since start and
// returns resp.
func observe(webhook string, req admission.Request, start time.Time, resp admission.Response) admission.Response {
	observeLatency(webhook, req, time.Since(start), resp)
	return resp
}

func observeLatency(webhook string, req admission.Request, latency time.Duration, resp admission.Response) {
	outcome, code := resultOf(resp)
	durationObservers.get(durationKey{webhook, operationLabel(req.Operation), kindLabel(req.Kind), outcome}).
		Observe(latency.Seconds())
	admissionCounters.get(admissionKey{webhook, outcome, code}).Inc()
}

func resultOf(resp admission.Response) (string, int32) {
	code := int32(200)
	if resp.Result != nil && resp.Result.Code != 0 {
		code = resp.Result.Code
	}
	switch {
	case resp.Allowed:
		return resultAllowed, code
	case code == 403:
		return resultDenied, code
	}
	return resultError, code
}

// countDecision counts one decision, its violations, and why it failed.
func countDecision(webhook string, d evaluator.Decision, err error) {
	switch {
	case err != nil:
		decisionCounters.get(decisionKey{webhook, resultError}).Inc()
		if reason := errorReason(err); reason != "" {
			errorCounters.get(reason).Inc()
		}
		return
	case d.Allowed:
		decisionCounters.get(decisionKey{webhook, resultAllowed}).Inc()
	default:
		decisionCounters.get(decisionKey{webhook, resultDenied}).Inc()
	}
	countViolations(d.Violations, evaluator.EnforceDeny)
	countViolations(d.Warned, evaluator.EnforceWarn)
	countViolations(d.DryRun, evaluator.EnforceDryRun)
}

func countViolations(vs []evaluator.Violation, enforcement string) {
	for _, v := range vs {
		e := v.Enforcement
		if e == "" {
			e = enforcement
		}
		violationCounters.get(violationKey{string(v.Dimension), v.Code, e}).Inc()
	}
}

// errorReason classifies a failed decision; "" for bad input, which is the
// client's error, not an evaluation error.
func errorReason(err error) string {
	switch {
	case errors.Is(err, workload.ErrInvalid), errors.Is(err, workload.ErrUnsupportedKind):
		return ""
	case errors.Is(err, evaluator.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return reasonTimeout
	case errors.Is(err, review.ErrNoPolicy):
		return reasonNoPolicy
	}
	return reasonError
}

func operationLabel(op admissionv1.Operation) string {
	switch op {
	case admissionv1.Create:
		return "CREATE"
	case admissionv1.Update:
		return "UPDATE"
	case admissionv1.Delete:
		return "DELETE"
	case admissionv1.Connect:
		return "CONNECT"
	}
	return labelOther
}

// kindLabel names a governed kind by its registered label, namespaces as
// "Namespace"; anything else is "other".
func kindLabel(k metav1.GroupVersionKind) string {
	if kind, ok := workload.LookupGroupKind(schema.GroupKind{Group: k.Group, Kind: k.Kind}); ok {
		return kind.Label
	}
	if k.Group == "" && k.Kind == "Namespace" {
		return "Namespace"
	}
	return labelOther
}

func codeLabel(code int32) string {
	switch code {
	case 200:
		return "200"
	case 400:
		return "400"
	case 403:
		return "403"
	case 500:
		return "500"
	}
	return strconv.Itoa(int(code))
}
