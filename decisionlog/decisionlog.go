// Package decisionlog writes Mandate's decision log: one structured JSON
// line per admission decision (its id, the policy revision that made it,
// the tenant and workload, the result, every violation, the directives,
// the latency and, when a shadow revision runs, what it would have
// decided), through a dedicated slog logger whose lines carry
// "logger":"decision". Clean allowed decisions may be sampled; denials,
// errors, warned or dry-run violations and shadow differences are always
// written. The submitted object is never written unless asked, and then
// with environment values, arguments and annotation values redacted.
package decisionlog

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/evaluator"
)

// Name is the value of the "logger" key on every decision line.
const Name = "decision"

// Message is the "msg" of every decision line.
const Message = "decision"

// Results of a decision.
const (
	ResultAllowed = "allowed"
	ResultDenied  = "denied"
	ResultError   = "error"
)

// Options configure a Logger.
type Options struct {
	// Enabled writes decision lines; New returns nil (which logs nothing)
	// when false.
	Enabled bool
	// SampleRate is the fraction (0..1) of clean allowed decisions written;
	// every other decision is always written.
	SampleRate float64
	// IncludeObject adds the submitted object, redacted (see Redact).
	IncludeObject bool
}

// DefaultOptions are the decisionLog.* defaults: every decision, without
// objects.
func DefaultOptions() Options {
	d := config.Default().DecisionLog
	return Options{Enabled: d.Enabled, SampleRate: d.SampleRate, IncludeObject: d.IncludeObject}
}

// Logger writes decision lines. A nil *Logger writes nothing. Safe for
// concurrent use.
type Logger struct {
	log  *slog.Logger
	opts Options
}

// New returns a Logger writing through h; nil when o.Enabled is false.
func New(h slog.Handler, o Options) (*Logger, error) {
	if o.SampleRate < 0 || o.SampleRate > 1 {
		return nil, fmt.Errorf("decision log sample rate %v is out of range (0..1)", o.SampleRate)
	}
	if !o.Enabled {
		return nil, nil
	}
	return &Logger{log: slog.New(h).With("logger", Name), opts: o}, nil
}

// Entry is one decision as the webhook saw it.
type Entry struct {
	// Webhook is "mutate" or "validate".
	Webhook string
	Request evaluator.Request
	// APIVersion, Kind, Namespace and Name identify the workload; Tenant
	// is its namespace's tenant.
	APIVersion, Kind, Namespace, Name, Tenant string
	// Decision is what the active revision decided; zero when Err is set.
	Decision evaluator.Decision
	// Err is why no decision could be made.
	Err error
	// Latency is from the start of the webhook's handling to the response.
	Latency time.Duration
	// Reinvocation is set when the object already carried Mandate's
	// directives: the API server called the mutating webhook again within
	// the same request (reinvocationPolicy IfNeeded, after another plugin
	// changed the object), or the client submitted them.
	Reinvocation bool
	// Shadow is the shadow revision's decision, nil without one.
	Shadow *Shadow
	// Object is the submitted object, written (redacted) only with
	// Options.IncludeObject.
	Object map[string]any
}

// Shadow is what a shadow (candidate) revision decided about the same input.
type Shadow struct {
	Revision    string
	Decision    evaluator.Decision
	Differences []string
}

// Result is the entry's result: ResultError, ResultDenied or ResultAllowed.
func (e *Entry) Result() string {
	switch {
	case e.Err != nil:
		return ResultError
	case !e.Decision.Allowed:
		return ResultDenied
	}
	return ResultAllowed
}

// clean is an allowed decision with nothing to look at: the only kind
// that is sampled.
func (e *Entry) clean() bool {
	d := e.Decision
	return e.Err == nil && d.Allowed && len(d.Violations) == 0 && len(d.Warned) == 0 && len(d.DryRun) == 0 &&
		(e.Shadow == nil || len(e.Shadow.Differences) == 0)
}

// Log writes e unless it is a clean allowed decision left out by sampling.
// It reports whether a line was written.
func (l *Logger) Log(ctx context.Context, e *Entry) bool {
	if l == nil {
		return false
	}
	sampled := false
	if e.clean() && l.opts.SampleRate < 1 {
		if l.opts.SampleRate <= 0 || rand.Float64() >= l.opts.SampleRate {
			return false
		}
		sampled = true
	}
	l.log.LogAttrs(ctx, slog.LevelInfo, Message, l.attrs(e, sampled)...)
	return true
}

// violation is a violation as logged.
type violation struct {
	Code        string `json:"code"`
	Dimension   string `json:"dimension"`
	Enforcement string `json:"enforcement"`
	Message     string `json:"message"`
}

func violations(vs []evaluator.Violation, enforcement string) []violation {
	out := make([]violation, len(vs))
	for i, v := range vs {
		e := v.Enforcement
		if e == "" {
			e = enforcement
		}
		out[i] = violation{Code: v.Code, Dimension: string(v.Dimension), Enforcement: e, Message: v.Message}
	}
	return out
}

func (l *Logger) attrs(e *Entry, sampled bool) []slog.Attr {
	d := e.Decision
	result := e.Result()
	attrs := make([]slog.Attr, 0, 24)
	attrs = append(attrs,
		slog.String("id", d.ID),
		slog.String("revision", d.Revision),
		slog.String("result", result),
		slog.String("webhook", e.Webhook),
		slog.String("operation", e.Request.Operation),
		slog.Bool("dryRun", e.Request.DryRun),
		slog.String("user", e.Request.User),
		slog.String("tenant", e.Tenant),
		slog.String("namespace", e.Namespace),
		slog.String("apiVersion", e.APIVersion),
		slog.String("kind", e.Kind),
		slog.String("name", e.Name),
		slog.Float64("latencyMs", float64(e.Latency.Microseconds())/1000),
		slog.Bool("reinvocation", e.Reinvocation),
	)
	if e.Err != nil {
		attrs = append(attrs, slog.String("error", e.Err.Error()))
	} else {
		attrs = append(attrs, slog.Any("violations", violations(d.Violations, evaluator.EnforceDeny)))
	}
	if len(d.Warned) > 0 {
		attrs = append(attrs, slog.Any("warned", violations(d.Warned, evaluator.EnforceWarn)))
	}
	if len(d.DryRun) > 0 {
		attrs = append(attrs, slog.Any("dryrunViolations", violations(d.DryRun, evaluator.EnforceDryRun)))
	}
	if len(d.Warnings) > 0 {
		attrs = append(attrs, slog.Any("warnings", d.Warnings))
	}
	if result == ResultAllowed {
		dir := d.Directives
		attrs = append(attrs, slog.Group("directives",
			slog.String("scheduler", dir.Scheduler),
			slog.String("queue", dir.Queue),
			slog.String("priorityClass", dir.PriorityClass),
			slog.Bool("preemptible", dir.Preemptible),
			slog.Int("gangMin", dir.GangMin),
			slog.String("requiredLevel", dir.RequiredLevel),
		))
	}
	if s := e.Shadow; s != nil {
		shadowResult := ResultAllowed
		if !s.Decision.Allowed {
			shadowResult = ResultDenied
		}
		diffs := s.Differences
		if diffs == nil {
			diffs = []string{}
		}
		attrs = append(attrs, slog.Group("shadow",
			slog.String("revision", s.Revision),
			slog.String("id", s.Decision.ID),
			slog.String("result", shadowResult),
			slog.Any("differences", diffs),
		))
	}
	if sampled {
		attrs = append(attrs, slog.Float64("sampleRate", l.opts.SampleRate))
	}
	if l.opts.IncludeObject && e.Object != nil {
		attrs = append(attrs, slog.Any("object", Redact(e.Object)))
	}
	return attrs
}
