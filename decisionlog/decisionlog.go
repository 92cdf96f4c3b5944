// Package decisionlog writes Mandate's decision log: one structured JSON
// line per admission decision (its id, the policy revision that made it,
// the tenant and workload, the result, every violation, the directives,
// the latency and, when a shadow revision runs, what it would have
// decided), through a dedicated slog logger whose lines carry
// "logger":"decision". Clean allowed decisions may be sampled; denials,
// errors, warned or dry-run violations and shadow differences are always
// written. The submitted object is never written unless asked, and then
// with environment values, arguments and annotation values redacted. Lines
// are built from attributes of concrete types (no reflection) and, with a
// queue, written by a goroutine of their own: when the queue is full an
// allowed decision's line is dropped and counted, a denial's or an error's
// is written by the caller, never dropped.
package decisionlog

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/internal/jsonenc"
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

var droppedLines = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "mandate_decision_log_dropped_total",
	Help: "Decision log lines of allowed decisions dropped because the decision log's queue was full; denials and errors are never dropped.",
})

func init() { metrics.Registry.MustRegister(droppedLines) }

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
	// Queue is how many lines may wait for the writer goroutine; 0 writes
	// each line in the caller. When it is full, an allowed decision's line
	// is dropped (counted by Dropped and mandate_decision_log_dropped_total)
	// and any other line is written by the caller.
	Queue int
}

// DefaultQueue is the queue `serve` writes decision lines through: a few
// seconds of decisions at full speed, so a slow log pipe delays no
// admission.
const DefaultQueue = 4096

// DefaultOptions are the decisionLog.* defaults: every decision, without
// objects.
func DefaultOptions() Options {
	d := config.Default().DecisionLog
	return Options{Enabled: d.Enabled, SampleRate: d.SampleRate, IncludeObject: d.IncludeObject}
}

// Logger writes decision lines. A nil *Logger writes nothing. Safe for
// concurrent use.
type Logger struct {
	handler slog.Handler
	opts    Options
	// queue, with Options.Queue, carries lines to the writer goroutine,
	// which closes done when Close has closed queue and it has written
	// what was left.
	queue   chan slog.Record
	done    chan struct{}
	mu      sync.RWMutex // held to send on queue; Close takes it to close queue
	closed  bool
	dropped atomic.Uint64
}

// New returns a Logger writing through h; nil when o.Enabled is false.
// With o.Queue it starts the goroutine that writes the queued lines: Close
// stops it.
func New(h slog.Handler, o Options) (*Logger, error) {
	if o.SampleRate < 0 || o.SampleRate > 1 {
		return nil, fmt.Errorf("decision log sample rate %v is out of range (0..1)", o.SampleRate)
	}
	if o.Queue < 0 {
		return nil, fmt.Errorf("decision log queue %d is negative", o.Queue)
	}
	if !o.Enabled {
		return nil, nil
	}
	l := &Logger{handler: h.WithAttrs([]slog.Attr{slog.String("logger", Name)}), opts: o}
	if o.Queue > 0 {
		l.queue, l.done = make(chan slog.Record, o.Queue), make(chan struct{})
		go l.write()
	}
	return l, nil
}

// write writes the queued lines until Close.
func (l *Logger) write() {
	defer close(l.done)
	for r := range l.queue {
		// A line that cannot be written has nowhere else to go; the
		// handler's writer reports its own errors.
		_ = l.handler.Handle(context.Background(), r)
	}
}

// Close writes the lines still queued and stops the writer goroutine;
// later lines are written by their callers. Safe to call more than once.
func (l *Logger) Close() {
	if l == nil || l.queue == nil {
		return
	}
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.queue)
	}
	l.mu.Unlock()
	<-l.done
}

// Dropped is how many allowed decisions' lines this Logger dropped because
// its queue was full.
func (l *Logger) Dropped() uint64 {
	if l == nil {
		return 0
	}
	return l.dropped.Load()
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
	if !l.handler.Enabled(ctx, slog.LevelInfo) {
		return false
	}
	// No caller's PC: the line says where it comes from ("logger").
	r := slog.NewRecord(time.Now(), slog.LevelInfo, Message, 0)
	r.AddAttrs(l.attrs(e, sampled)...)
	if l.enqueue(r, e.Result() == ResultAllowed) {
		return true
	}
	// Synchronous, or a line that is never dropped and found no room.
	_ = l.handler.Handle(context.WithoutCancel(ctx), r)
	return true
}

// enqueue hands r to the writer goroutine; false when r is to be written
// by the caller: there is no queue, it is closed, or it is full and r may
// not be dropped. A droppable line that finds the queue full is counted
// and dropped (enqueue then reports true: the line is done with).
func (l *Logger) enqueue(r slog.Record, droppable bool) bool {
	if l.queue == nil {
		return false
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return false
	}
	select {
	case l.queue <- r:
		return true
	default:
	}
	if !droppable {
		return false
	}
	l.dropped.Add(1)
	droppedLines.Inc()
	return true
}

// violations are violations as logged: a JSON array of objects with code,
// dimension, enforcement (the default one when a violation has none) and
// message, encoded by hand.
type violations struct {
	list        []evaluator.Violation
	enforcement string
}

// MarshalJSON implements json.Marshaler.
func (vs violations) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 64+128*len(vs.list))
	b = append(b, '[')
	for i, v := range vs.list {
		if i > 0 {
			b = append(b, ',')
		}
		e := v.Enforcement
		if e == "" {
			e = vs.enforcement
		}
		b = append(b, `{"code":`...)
		b = jsonenc.AppendString(b, v.Code)
		b = append(b, `,"dimension":`...)
		b = jsonenc.AppendString(b, string(v.Dimension))
		b = append(b, `,"enforcement":`...)
		b = jsonenc.AppendString(b, e)
		b = append(b, `,"message":`...)
		b = jsonenc.AppendString(b, v.Message)
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// stringList is a JSON array of strings, encoded by hand.
type stringList []string

// MarshalJSON implements json.Marshaler.
func (ss stringList) MarshalJSON() ([]byte, error) {
	n := 2
	for _, s := range ss {
		n += len(s) + 3
	}
	b := append(make([]byte, 0, n), '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, s)
	}
	return append(b, ']'), nil
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
		attrs = append(attrs, slog.Any("violations", violations{d.Violations, evaluator.EnforceDeny}))
	}
	if len(d.Warned) > 0 {
		attrs = append(attrs, slog.Any("warned", violations{d.Warned, evaluator.EnforceWarn}))
	}
	if len(d.DryRun) > 0 {
		attrs = append(attrs, slog.Any("dryrunViolations", violations{d.DryRun, evaluator.EnforceDryRun}))
	}
	if len(d.Warnings) > 0 {
		attrs = append(attrs, slog.Any("warnings", stringList(d.Warnings)))
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
			slog.Any("differences", stringList(diffs)),
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
