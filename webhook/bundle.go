package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/evaluator"
)

// StatusPath is where the metrics server serves the bundle status.
const StatusPath = "/bundle/status"

// SourceError is a bundle source that could not be read or activated at
// startup, with no persisted last good bundle to serve instead: serve
// cannot start.
type SourceError struct {
	// Shadow is true for the shadow bundle's source.
	Shadow bool
	Err    error
}

func (e *SourceError) Error() string {
	if e.Shadow {
		return "shadow bundle source: " + e.Err.Error()
	}
	return "bundle source: " + e.Err.Error()
}

func (e *SourceError) Unwrap() error { return e.Err }

// firstActivation polls src once and, when that leaves nothing active,
// falls back to the persisted last good bundle; a SourceError when neither
// activates.
func firstActivation(ctx context.Context, act *bundles.Activator, src bundles.Source, persistDir string, shadow bool) error {
	log := ctrl.LoggerFrom(ctx)
	err := src.Poll(ctx)
	if act.Current() != nil {
		return nil
	}
	if err == nil {
		err = errors.New("no bundle activated")
	}
	if persistDir == "" {
		return &SourceError{Shadow: shadow, Err: err}
	}
	if perr := act.LoadPersisted(ctx); perr != nil {
		return &SourceError{Shadow: shadow, Err: fmt.Errorf("%w (and the persisted last good bundle: %w)", err, perr)}
	}
	log.Error(err, "unable to activate the bundle at startup; serving the persisted last good bundle",
		"revision", act.Status().Revision, "shadow", shadow)
	return nil
}

// shadow sets up the shadow bundle of o.Shadow, if any: its Activator,
// activated before the manager starts, and the Source polling it.
func (s *Server) shadow(ctx context.Context, o Options, r *Reviewer) (bundles.Source, error) {
	if o.Shadow == nil {
		return nil, nil
	}
	opts := *o.Shadow
	opts.Activator.Shadow = true
	if opts.Activator.Evaluator == (evaluator.Options{}) {
		opts.Activator.Evaluator = o.Evaluation
	}
	act, src, err := bundles.NewSource(opts)
	if err != nil {
		return nil, &SourceError{Shadow: true, Err: err}
	}
	if err := firstActivation(ctx, act, src, opts.Activator.PersistDir, true); err != nil {
		return nil, err
	}
	ctrl.LoggerFrom(ctx).Info("shadow bundle activated: decided beside the active revision, never enforced",
		"shadowRevision", act.Current().Revision())
	s.Shadow = act
	r.Shadow = current(act)
	return src, nil
}

// current asks act, on every call, for the revision active now; nil (no
// Decider) while none is.
func current(act *bundles.Activator) func() Decider {
	return func() Decider {
		if ev := act.Current(); ev != nil {
			return ev
		}
		return nil
	}
}

// BundleStatus is what StatusPath serves: the activation status of the
// active policy and of the shadow revision, if any.
type BundleStatus struct {
	Active bundles.Status  `json:"active"`
	Shadow *bundles.Status `json:"shadow,omitempty"`
}

// BundleStatus returns the activation status; without a bundle source,
// the policy loaded at startup.
func (s *Server) BundleStatus() BundleStatus {
	var st BundleStatus
	switch {
	case s.Activator != nil:
		st.Active = s.Activator.Status()
	case s.Evaluator != nil:
		st.Active = bundles.Status{Revision: s.Evaluator.Revision(), Source: "policies"}
	}
	if s.Shadow != nil {
		shadow := s.Shadow.Status()
		st.Shadow = &shadow
	}
	return st
}

// metricsOptions serve /metrics and StatusPath at o.MetricsAddr.
func (s *Server) metricsOptions(o Options) metricsserver.Options {
	return metricsserver.Options{BindAddress: o.MetricsAddr,
		ExtraHandlers: map[string]http.Handler{StatusPath: http.HandlerFunc(s.serveStatus)}}
}

// serveStatus serves BundleStatus as JSON.
func (s *Server) serveStatus(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(s.BundleStatus())
}
