package authoritymetrics

import (
	"context"
	"errors"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/mandate-dev/mandate/clusterreport"
)

// DefaultInterval is how often the report behind the metrics is computed.
const DefaultInterval = time.Minute

// idlePerBusy is how much longer than a report took the loop waits before
// the next one at least: a report lists and decides the whole cluster, so
// on a large cluster or a busy machine it takes seconds of CPU that
// admissions need, and it runs at most a fifth of the time whatever the
// Interval.
const idlePerBusy = 4

// Loop recomputes the report every Interval (longer when a report takes
// more than a fifth of it) and publishes it. A failed report is logged and
// the gauges keep their last values (the timestamp says how old they are).
type Loop struct {
	// Report computes the cluster report now.
	Report   func(ctx context.Context) (*clusterreport.Report, error)
	Interval time.Duration
	// Ready, when set, is waited for before the first report: serve's
	// cluster state synced, so that the report's listing of the whole
	// cluster does not compete with the informers' first listing for the
	// CPU, the memory and the API server while serve is not ready yet.
	Ready func() bool
}

var _ manager.Runnable = (*Loop)(nil)

// Start runs until ctx ends, then withdraws the report (see Withdraw): ctx
// ends when serve stops or, under leader election, when this replica loses
// the Lease while it keeps serving.
func (l *Loop) Start(ctx context.Context) error {
	defer Withdraw()
	log := ctrl.LoggerFrom(ctx).WithName("authoritymetrics")
	interval := l.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	for l.Ready != nil && !l.Ready() {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
	for {
		started := time.Now()
		switch err := l.Once(ctx); {
		case errors.Is(err, ErrNoPolicy):
			log.V(1).Info("authority metrics wait for a policy revision")
		case err != nil:
			log.Error(err, "unable to compute the authority metrics")
		}
		took := time.Since(started)
		wait := max(interval-took, idlePerBusy*took)
		if wait > interval-took {
			log.V(1).Info("authority metrics spaced out: the report takes long", "took", took.String(), "next in", wait.String())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// Once computes and publishes one report.
func (l *Loop) Once(ctx context.Context) error {
	r, err := l.Report(ctx)
	if err != nil {
		return err
	}
	Publish(r, float64(time.Now().Unix()))
	return nil
}
