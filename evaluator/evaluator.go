// Package evaluator is Mandate's OPA integration: it compiles a Policy once,
// prepares the decision query once, and answers Decide for every admission
// with a typed Decision, within a per-evaluation deadline. It also registers
// Mandate's Rego builtins (mandate.placement).
package evaluator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/model"
)

// DefaultQuery is the Decision entrypoint of the authority model.
const DefaultQuery = "data.mandate.decision"

// DefaultExplainQuery is the per-dimension explanation entrypoint.
const DefaultExplainQuery = "data.mandate.explanations"

// DefaultTimeout bounds one evaluation; admission must answer well within the
// webhook's timeoutSeconds.
const DefaultTimeout = config.DefaultEvaluationTimeout

// ErrTimeout is returned when an evaluation exceeds its deadline.
var ErrTimeout = errors.New("policy evaluation exceeded its deadline")

// Options configure an Evaluator.
type Options struct {
	// Query is the decision entrypoint; DefaultQuery when empty.
	Query string
	// ExplainQuery is the explanation entrypoint; DefaultExplainQuery when
	// empty.
	ExplainQuery string
	// Timeout per evaluation; DefaultTimeout when zero.
	Timeout time.Duration
	// EnforcementOverride, when EnforceDryRun or EnforceWarn, is the action
	// of every violation the model would deny: the workload is admitted and
	// the violation recorded (dryrun) or warned (warn). Empty keeps the
	// model's enforcement.
	EnforcementOverride string
}

// Evaluator decides workloads against one compiled Policy. It is safe for
// concurrent use.
type Evaluator struct {
	query rego.PreparedEvalQuery
	// explained evaluates the decision and its explanations together, so
	// they share one evaluation's rule cache.
	explained rego.PreparedEvalQuery
	timeout   time.Duration
	override  string
	revision  string
	model     model.Model
	data      map[string]any
	// withObject: some rule may read input.object (readsObject); without
	// one the raw object is left out of the input.
	withObject bool
}

// New compiles the policy and prepares the decision query.
func New(ctx context.Context, p *Policy, opts Options) (*Evaluator, error) {
	if opts.Query == "" {
		opts.Query = DefaultQuery
	}
	if opts.ExplainQuery == "" {
		opts.ExplainQuery = DefaultExplainQuery
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	m, err := modelOf(p)
	if err != nil {
		return nil, err
	}
	// Before compiling, which moves input into local variables.
	withObject, err := readsObjectIn(p.Modules, opts.Query, opts.ExplainQuery)
	if err != nil {
		return nil, fmt.Errorf("unable to read the queries (revision %q): %w", p.Revision, err)
	}
	// The modules are compiled once; both queries are prepared on the
	// compiled result.
	compiler := ast.NewCompiler()
	if compiler.Compile(p.Modules); compiler.Failed() {
		return nil, fmt.Errorf("unable to compile policies (revision %q): %w", p.Revision, compiler.Errors)
	}
	store := inmem.NewFromObjectWithOpts(p.Data, inmem.OptReturnASTValuesOnRead(true))
	prepare := func(query string) (rego.PreparedEvalQuery, error) {
		pq, err := rego.New(rego.Query(query), rego.Store(store), rego.Compiler(compiler), rego.StrictBuiltinErrors(true)).
			PrepareForEval(ctx)
		if err != nil {
			return pq, fmt.Errorf("unable to prepare the query %q (revision %q): %w", query, p.Revision, err)
		}
		return pq, nil
	}
	switch opts.EnforcementOverride {
	case "", EnforceDryRun, EnforceWarn:
	default:
		return nil, fmt.Errorf("enforcement override %q: want %q, %q or none", opts.EnforcementOverride, EnforceDryRun, EnforceWarn)
	}
	e := &Evaluator{timeout: opts.Timeout, override: opts.EnforcementOverride, revision: p.Revision, model: m, data: p.Data,
		withObject: withObject}
	if e.query, err = prepare(opts.Query); err != nil {
		return nil, err
	}
	if e.explained, err = prepare(fmt.Sprintf("%s = %s; %s = %s", decisionVar, opts.Query, explanationsVar, opts.ExplainQuery)); err != nil {
		return nil, err
	}
	return e, nil
}

// modelOf is the policy's authority model: the one decoded at its
// activation, else decoded now.
func modelOf(p *Policy) (model.Model, error) {
	if p.Model == nil {
		return model.FromData(p.Data)
	}
	return *p.Model, p.Model.Usable()
}

// noMetrics discards OPA's per-evaluation metrics.
var noMetrics = metrics.NoOp()

const (
	decisionVar     = "decision"
	explanationsVar = "explanations"
)

// Revision is the revision of the policy this evaluator decides with.
func (e *Evaluator) Revision() string { return e.revision }

// Model is the Go-side view of the authority model.
func (e *Evaluator) Model() model.Model { return e.model }

// Data is the policy's data document (the authority model among it, which
// Go reads through Model). It is shared: callers must not modify it.
func (e *Evaluator) Data() map[string]any { return e.data }

// Decide evaluates the authority model for one workload.
func (e *Evaluator) Decide(ctx context.Context, in Input) (Decision, error) {
	if !e.withObject {
		in.Object = nil
	}
	value, err := in.value()
	if err != nil {
		return Decision{}, err
	}
	// The deadline and the caller's cancellation stop the evaluation through
	// one topdown.Cancel: a timer and a context callback, rather than a
	// context.WithTimeout, for which rego would start (and wake) a goroutine
	// on every evaluation.
	cancel := topdown.NewCancel()
	timer := time.AfterFunc(e.timeout, cancel.Cancel)
	defer timer.Stop()
	defer context.AfterFunc(ctx, cancel.Cancel)()
	if in.Cluster != nil {
		ctx = ContextWithSnapshot(ctx, in.Cluster)
	}
	query := e.query
	if in.Explain {
		query = e.explained
	}
	// No metrics: nothing reads them, and OPA would otherwise make a set of
	// timers for every evaluation.
	rs, err := query.Eval(ctx, rego.EvalParsedInput(value), rego.EvalExternalCancel(cancel), rego.EvalMetrics(noMetrics),
		rego.EvalGenerateJSON(asValue))
	if err != nil {
		return Decision{}, e.evalError(ctx, err)
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return Decision{}, fmt.Errorf("policy revision %q produced no decision: the decision or explanation entrypoint is undefined for this input", e.revision)
	}
	// OPA's values, as asValue handed them over.
	raw, _ := rs[0].Expressions[0].Value.(ast.Value)
	var explanations ast.Value
	if in.Explain {
		raw, _ = rs[0].Bindings[decisionVar].(ast.Value)
		explanations, _ = rs[0].Bindings[explanationsVar].(ast.Value)
	}
	d, err := decodeDecision(raw, explanations)
	if err != nil {
		return Decision{}, fmt.Errorf("policy revision %q returned a malformed decision: %w", e.revision, err)
	}
	d.ID = newID()
	d.Revision = e.revision
	override(&d, e.override)
	return d, nil
}

// evalError says which rule failed and why.
func (e *Evaluator) evalError(ctx context.Context, err error) error {
	if ctx.Err() != nil || topdown.IsCancel(err) {
		return fmt.Errorf("%w (%s, revision %q)", ErrTimeout, e.timeout, e.revision)
	}
	var terr *topdown.Error
	if errors.As(err, &terr) && terr.Location != nil {
		return fmt.Errorf("policy revision %q failed at %s: %s: %w", e.revision, terr.Location, terr.Message, err)
	}
	return fmt.Errorf("policy revision %q failed: %w", e.revision, err)
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
