package review

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler"
)

// Kinds of difference between a shadow decision and the active one, as
// labelled in mandate_shadow_differences_total.
const (
	DiffAllowedToDenied = "allowed_to_denied"
	DiffDeniedToAllowed = "denied_to_allowed"
	DiffViolations      = "violations"
	DiffDirectives      = "directives"
	DiffWarnings        = "warnings"
)

var (
	shadowDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mandate_shadow_decisions_total",
		Help: "Decisions of the shadow bundle revision by agreement with the active one (same, different, error).",
	}, []string{"agreement"})
	shadowDifferences = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mandate_shadow_differences_total",
		Help: "Differences between the shadow and the active decision, one per difference, by kind (allowed_to_denied, denied_to_allowed, violations, directives, warnings).",
	}, []string{"kind"})
)

func init() {
	metrics.Registry.MustRegister(shadowDecisions, shadowDifferences)
}

// Shadow is a candidate revision's decision beside the active one.
type Shadow struct {
	Revision string
	Decision evaluator.Decision
	// Differences say, one per entry, how the candidate's decision differs
	// from the active one ("allowed: true -> false", "directives.queue:
	// research -> research-llm"); empty when they agree.
	Differences []string
}

// revisioned is what a Decider that knows its revision offers (the
// evaluator), to name the shadow revision when it fails.
type revisioned interface{ Revision() string }

// decideShadow decides in with the shadow revision and compares the
// result with the active decision. An error is counted and logged, and
// returns nil: the shadow never fails an admission.
func decideShadow(ctx context.Context, shadow Decider, in evaluator.Input, active evaluator.Decision) *Shadow {
	log := ctrl.LoggerFrom(ctx)
	d, err := shadow.Decide(ctx, in)
	if err != nil {
		shadowDecisions.WithLabelValues("error").Inc()
		revision := ""
		if rv, ok := shadow.(revisioned); ok {
			revision = rv.Revision()
		}
		log.Error(err, "shadow revision failed to decide; the active decision stands",
			"decisionID", active.ID, "revision", active.Revision, "shadowRevision", revision)
		return nil
	}
	d = scheduler.RefuseUnrenderable(in.Workload, d)
	diffs := Differences(active, d)
	out := &Shadow{Revision: d.Revision, Decision: d}
	if len(diffs) == 0 {
		shadowDecisions.WithLabelValues("same").Inc()
		return out
	}
	shadowDecisions.WithLabelValues("different").Inc()
	out.Differences = make([]string, len(diffs))
	for i, diff := range diffs {
		shadowDifferences.WithLabelValues(diff.Kind).Inc()
		out.Differences[i] = diff.Text
	}
	log.V(1).Info("shadow revision decides differently", "decisionID", active.ID, "revision", active.Revision,
		"shadowRevision", d.Revision, "differences", out.Differences)
	return out
}

// Difference is one way a candidate decision differs from the active one.
type Difference struct {
	// Kind is one of the Diff* constants.
	Kind string
	// Text says what differs, "active -> candidate": "allowed: true ->
	// false", "directives.queue: research -> research-llm".
	Text string
}

// Differences lists how the candidate decision differs from the active
// one: admission, the codes of enforced violations, the warnings and,
// when both admit, each directive. Empty when they agree.
func Differences(active, candidate evaluator.Decision) []Difference {
	var out []Difference
	switch {
	case active.Allowed && !candidate.Allowed:
		out = append(out, Difference{DiffAllowedToDenied, "allowed: true -> false"})
	case !active.Allowed && candidate.Allowed:
		out = append(out, Difference{DiffDeniedToAllowed, "allowed: false -> true"})
	}
	if a, c := violationCodes(active.Violations), violationCodes(candidate.Violations); !slices.Equal(a, c) {
		out = append(out, Difference{DiffViolations, fmt.Sprintf("violations: %s -> %s", list(a), list(c))})
	}
	if a, c := sorted(active.Warnings), sorted(candidate.Warnings); !slices.Equal(a, c) {
		out = append(out, Difference{DiffWarnings, fmt.Sprintf("warnings: %s -> %s", list(a), list(c))})
	}
	if active.Allowed && candidate.Allowed {
		out = append(out, directiveDifferences(active.Directives, candidate.Directives)...)
	}
	return out
}

// directiveDifferences compares directives field by field, named by their
// JSON names.
func directiveDifferences(a, c evaluator.Directives) []Difference {
	var out []Difference
	av, cv := reflect.ValueOf(a), reflect.ValueOf(c)
	t := av.Type()
	for i := range t.NumField() {
		x, y := av.Field(i).Interface(), cv.Field(i).Interface()
		if equalDirective(x, y) {
			continue
		}
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, Difference{DiffDirectives, fmt.Sprintf("directives.%s: %s -> %s", name, show(x), show(y))})
	}
	return out
}

// equalDirective compares two values of a directive; an empty map equals
// a nil one.
func equalDirective(x, y any) bool {
	if mx, ok := x.(map[string]string); ok {
		return maps.Equal(mx, y.(map[string]string))
	}
	return reflect.DeepEqual(x, y)
}

// show prints a directive's value; an empty string as "" so that a
// difference to nothing reads as one.
func show(v any) string {
	switch v := v.(type) {
	case string:
		if v == "" {
			return `""`
		}
		return v
	case map[string]string:
		keys := slices.Sorted(maps.Keys(v))
		pairs := make([]string, len(keys))
		for i, k := range keys {
			pairs[i] = k + "=" + v[k]
		}
		return "{" + strings.Join(pairs, ",") + "}"
	}
	return fmt.Sprint(v)
}

func violationCodes(vs []evaluator.Violation) []string {
	codes := make([]string, len(vs))
	for i, v := range vs {
		codes[i] = v.Code
	}
	slices.Sort(codes)
	return codes
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func list(s []string) string { return "[" + strings.Join(s, ", ") + "]" }
