package bundles

import (
	"context"
	"errors"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
)

// StartupError is a bundle source that could not be read or activated at
// startup, with no persisted last good bundle to serve instead: the server
// cannot start.
type StartupError struct {
	// Shadow is true for the shadow bundle's source.
	Shadow bool
	Err    error
}

func (e *StartupError) Error() string {
	if e.Shadow {
		return "shadow bundle source: " + e.Err.Error()
	}
	return "bundle source: " + e.Err.Error()
}

func (e *StartupError) Unwrap() error { return e.Err }

// FirstActivation polls src once and, when that leaves nothing active in
// act, falls back to the bundle persisted in persistDir; a *StartupError
// when neither activates. shadow names which source it is in the error.
func FirstActivation(ctx context.Context, act *Activator, src Source, persistDir string, shadow bool) error {
	err := src.Poll(ctx)
	if act.Current() != nil {
		return nil
	}
	if err == nil {
		err = errors.New("no bundle activated")
	}
	if persistDir == "" {
		return &StartupError{Shadow: shadow, Err: err}
	}
	if perr := act.LoadPersisted(ctx); perr != nil {
		return &StartupError{Shadow: shadow, Err: fmt.Errorf("%w (and the persisted last good bundle: %w)", err, perr)}
	}
	ctrl.LoggerFrom(ctx).Error(err, "unable to activate the bundle at startup; serving the persisted last good bundle",
		"revision", act.Status().Revision, "shadow", shadow)
	return nil
}
