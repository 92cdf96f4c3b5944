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

// Loop recomputes the report every Interval and publishes it. A failed
// report is logged and the gauges keep their last values (the timestamp
// says how old they are).
type Loop struct {
	// Report computes the cluster report now.
	Report   func(ctx context.Context) (*clusterreport.Report, error)
	Interval time.Duration
}

var _ manager.Runnable = (*Loop)(nil)

// Start runs until ctx ends.
func (l *Loop) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("authoritymetrics")
	interval := l.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		switch err := l.Once(ctx); {
		case errors.Is(err, ErrNoPolicy):
			log.V(1).Info("authority metrics wait for a policy revision")
		case err != nil:
			log.Error(err, "unable to compute the authority metrics")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
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
