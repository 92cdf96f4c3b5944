package bundles

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/modelcheck"
	"github.com/mandate-dev/mandate/workload"
)

// PersistedFile is the name of the last good bundle in ActivatorOptions.PersistDir.
const PersistedFile = "last-good.tar.gz"

// Activation steps, as named in errors, the status and the metric.
const (
	StepRead   = "read"
	StepVerify = "verify"
	// StepModel is the model checker (package modelcheck) refusing the
	// revision's authority model: its schema or a semantic check.
	StepModel   = "model"
	StepCompile = "compile"
	StepSmoke   = "smoke"
	StepPersist = "persist"
	// StepState is the OnActivate hook refusing a revision (the cluster
	// state cannot take its authority model).
	StepState = "state"
)

var (
	activeRevision = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mandate_bundle_active_revision",
		Help: "1 for the policy revision that currently decides.",
	}, []string{"revision"})
	activations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mandate_bundle_activations_total",
		Help: "Bundle activations by result (success, or the step that failed: read, verify, model, compile, smoke, state, persist).",
	}, []string{"result"})
	shadowRevision = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mandate_bundle_shadow_revision",
		Help: "1 for the shadow (candidate) policy revision decided beside the active one, never enforced.",
	}, []string{"revision"})
	shadowActivations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mandate_bundle_shadow_activations_total",
		Help: "Shadow bundle activations by result (success, or the step that failed: read, verify, model, compile, smoke, state, persist).",
	}, []string{"result"})
)

func init() {
	metrics.Registry.MustRegister(activeRevision, activations, shadowRevision, shadowActivations)
	// Every result starts at 0, so rate() sees the first failure.
	for _, r := range []string{"success", StepRead, StepVerify, StepModel, StepCompile, StepSmoke, StepState, StepPersist} {
		activations.WithLabelValues(r)
	}
}

// ReportActive sets mandate_bundle_active_revision for a policy that
// decides without an Activator (a policy directory or the embedded model).
func ReportActive(revision string) {
	activeRevision.Reset()
	activeRevision.WithLabelValues(revision).Set(1)
}

// ActivatorOptions configure an Activator.
type ActivatorOptions struct {
	// Verify, when set, makes every bundle's signature required and checked
	// against its key: an unsigned bundle is rejected like a badly signed one.
	Verify *VerifyOptions
	// Require refuses to build an Activator without a verification key, so
	// unsigned bundles can never be activated.
	Require bool
	// Evaluator configures the evaluators compiled from bundles.
	Evaluator evaluator.Options
	// PersistDir, when set, receives a copy of every bundle activated from
	// a file (PersistedFile, renamed into place), for LoadPersisted.
	PersistDir string
	// SmokeInput is the decision every new revision must answer without an
	// error before it is swapped in; SmokeInput() when nil.
	SmokeInput *evaluator.Input
	// Shadow marks the Activator of a shadow (candidate) revision: its
	// revision and activations are reported as mandate_bundle_shadow_*.
	Shadow bool
}

// SmokeInput is a harmless decision: a CPU-only pod in a namespace of no
// tenant.
func SmokeInput() evaluator.Input {
	return evaluator.Input{
		Request:   evaluator.Request{Operation: "CREATE", User: "system:mandate:smoke", DryRun: true},
		Namespace: workload.Namespace{Name: "mandate-smoke", Labels: map[string]string{}},
		Workload:  workload.Workload{Kind: "Pod", APIVersion: "v1", Name: "smoke", Namespace: "mandate-smoke", Pods: 1},
	}
}

// Status is what the Activator last did.
type Status struct {
	// Revision is the active revision; empty before the first activation.
	Revision string `json:"revision"`
	// ActivatedAt is when Revision was swapped in.
	ActivatedAt time.Time `json:"activatedAt"`
	// LastAttempt is when an activation was last tried, LastError why it
	// failed (empty when it succeeded).
	LastAttempt time.Time `json:"lastAttempt"`
	LastError   string    `json:"lastError,omitempty"`
	// LastStep is the step that failed (read, verify, model, compile,
	// smoke, state, persist) when LastError is set.
	LastStep string `json:"lastStep,omitempty"`
	// Source names what was last tried (a path or URL).
	Source string `json:"source,omitempty"`
}

// ActivationError says which step rejected a bundle and why.
type ActivationError struct {
	Source string
	Step   string
	Err    error
}

func (e *ActivationError) Error() string {
	return fmt.Sprintf("bundle %s rejected at %s: %v (the previous revision keeps serving)", e.Source, e.Step, e.Err)
}

func (e *ActivationError) Unwrap() error { return e.Err }

// Activator holds the evaluator that decides and swaps in new revisions
// atomically: a bundle is read, verified, its authority model checked, and
// it is compiled and smoke-tested off the request path, and only then
// replaces the active one. A bundle failing
// any step leaves the last good one serving. Safe for concurrent use.
type Activator struct {
	opts    ActivatorOptions
	current atomic.Pointer[evaluator.Evaluator]

	mu     sync.Mutex // serialises activations
	status atomic.Pointer[Status]

	// revision and activations are the metrics of this Activator's role.
	revision    *prometheus.GaugeVec
	activations *prometheus.CounterVec
	// onActivate, guarded by mu, runs before each swap; see OnActivate.
	onActivate func(*evaluator.Evaluator) error
	// down, guarded by mu, is set while the source cannot be read;
	// beforeDown is the status from before (see sourceFailed).
	down       bool
	beforeDown Status
}

// OnActivate sets f to run for every new revision once it passed the smoke
// test, just before it is swapped in (e.g. to reshape the cluster state for
// its authority model). An error rejects the revision at StepState and the
// previous one keeps serving.
func (a *Activator) OnActivate(f func(*evaluator.Evaluator) error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.onActivate = f
}

// NewActivator returns an Activator with nothing active yet.
func NewActivator(o ActivatorOptions) (*Activator, error) {
	if o.Require && o.Verify == nil {
		return nil, errors.New("bundle signatures are required but no verification key is configured")
	}
	if o.Verify != nil {
		if _, err := o.Verify.verificationConfig(); err != nil {
			return nil, err
		}
	}
	a := &Activator{opts: o, revision: activeRevision, activations: activations}
	if o.Shadow {
		a.revision, a.activations = shadowRevision, shadowActivations
	}
	a.status.Store(&Status{})
	return a, nil
}

// Current is the evaluator that decides now; nil before the first
// activation. Callers take it once per decision.
func (a *Activator) Current() *evaluator.Evaluator { return a.current.Load() }

// Status returns a copy of the activation status.
func (a *Activator) Status() Status { return *a.status.Load() }

// Activate reads the bundle at path and activates it; with PersistDir set,
// a bundle that activates is persisted there.
func (a *Activator) Activate(ctx context.Context, path string) error {
	return a.activateFile(ctx, path, path, a.opts.PersistDir != "")
}

// LoadPersisted activates the last good bundle from PersistDir; an error
// when there is none or it no longer activates. The status keeps the
// error of the attempt that failed before it, if any.
func (a *Activator) LoadPersisted(ctx context.Context) error {
	if a.opts.PersistDir == "" {
		return errors.New("no persistence directory configured")
	}
	path := filepath.Join(a.opts.PersistDir, PersistedFile)
	a.mu.Lock()
	failed, down, beforeDown := a.Status(), a.down, a.beforeDown
	a.mu.Unlock()
	if err := a.activateFile(ctx, path, path+" (persisted)", false); err != nil {
		return err
	}
	if failed.LastError != "" {
		// Serving the fallback; the source's failure stays in the status.
		a.mu.Lock()
		st := a.Status()
		st.LastError, st.LastStep = failed.LastError, failed.LastStep
		a.status.Store(&st)
		a.down, a.beforeDown = down, beforeDown
		a.mu.Unlock()
	}
	return nil
}

func (a *Activator) activateFile(ctx context.Context, path, source string, persist bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, err := Load(path, a.opts.Verify)
	if err != nil {
		return a.fail(source, loadStep(err), err)
	}
	if err := a.activate(ctx, p, source); err != nil {
		return err
	}
	if persist {
		if err := a.persist(path); err != nil {
			// The bundle serves; only its copy failed.
			a.activations.WithLabelValues(StepPersist).Inc()
			return &ActivationError{Source: source, Step: StepPersist, Err: err}
		}
	}
	return nil
}

// loadStep is the step a loading error belongs to: verify for a missing or
// bad signature, else read.
func loadStep(err error) string {
	if errors.Is(err, ErrUnsigned) || errors.Is(err, ErrVerification) {
		return StepVerify
	}
	return StepRead
}

// ActivatePolicy checks the model of, compiles, smoke-tests and activates
// an already loaded policy (e.g. a directory's).
func (a *Activator) ActivatePolicy(ctx context.Context, p *evaluator.Policy) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.activate(ctx, p, fmt.Sprintf("revision %q", p.Revision))
}

func (a *Activator) activate(ctx context.Context, p *evaluator.Policy, source string) error {
	// The model is decoded once, here, and checked; the evaluator hands
	// it to every Go reader (the cluster state, sync, report, metrics).
	m, err := modelcheck.ReadValid(p.Data)
	if err != nil {
		return a.fail(source, StepModel, err)
	}
	withModel := *p
	withModel.Model = &m
	ev, err := evaluator.New(ctx, &withModel, a.opts.Evaluator)
	if err != nil {
		return a.fail(source, StepCompile, err)
	}
	in := SmokeInput()
	if a.opts.SmokeInput != nil {
		in = *a.opts.SmokeInput
	}
	if _, err := ev.Decide(ctx, in); err != nil {
		return a.fail(source, StepSmoke, err)
	}
	if a.onActivate != nil {
		if err := a.onActivate(ev); err != nil {
			return a.fail(source, StepState, err)
		}
	}
	old := a.current.Swap(ev)
	if old != nil && old.Revision() != ev.Revision() {
		a.revision.DeleteLabelValues(old.Revision())
	}
	a.revision.WithLabelValues(ev.Revision()).Set(1)
	a.activations.WithLabelValues("success").Inc()
	a.down = false
	now := time.Now()
	a.status.Store(&Status{Revision: ev.Revision(), ActivatedAt: now, LastAttempt: now, Source: source})
	return nil
}

// reject records a bundle refused before it could be loaded (by the
// downloader's reader) as a failure of step.
func (a *Activator) reject(source, step string, err error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fail(source, step, err)
}

func (a *Activator) fail(source, step string, err error) error {
	a.activations.WithLabelValues(step).Inc()
	a.down = false
	aerr := &ActivationError{Source: source, Step: step, Err: err}
	st := *a.status.Load()
	st.LastAttempt, st.LastError, st.LastStep, st.Source = time.Now(), aerr.Error(), step, source
	a.status.Store(&st)
	return aerr
}

// sourceFailed records, in the status and the metric, a source that could
// not be read (unreachable server, missing file): a failure of the read
// step. err is returned as it is.
//
// A poll that succeeds after such failures without activating anything
// (the bundle did not change meanwhile) restores the status from before
// them: the source is back, and what it holds was activated, or rejected,
// already.
func (a *Activator) sourceFailed(source string, err error) error {
	var aerr *ActivationError
	if errors.As(err, &aerr) {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	st := *a.status.Load()
	if err == nil {
		if a.down {
			st.LastAttempt, st.LastError, st.LastStep = time.Now(), a.beforeDown.LastError, a.beforeDown.LastStep
			a.status.Store(&st)
			a.down = false
		}
		return nil
	}
	if !a.down {
		a.down, a.beforeDown = true, st
	}
	a.activations.WithLabelValues(StepRead).Inc()
	st.LastAttempt, st.LastError, st.LastStep, st.Source = time.Now(), err.Error(), StepRead, source
	a.status.Store(&st)
	return err
}

// persist copies the bundle at path into PersistDir, renamed into place.
func (a *Activator) persist(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(a.opts.PersistDir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(a.opts.PersistDir, "."+PersistedFile+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(a.opts.PersistDir, PersistedFile))
}
