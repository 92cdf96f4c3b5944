package openreports

import (
	"context"
	"errors"
	"time"

	v1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/mandate-dev/mandate/audit"
	"github.com/mandate-dev/mandate/config"
)

// LeaseName is the Lease serve's replicas elect the background audit's
// writer by: the whole cluster is decided and written once, not per
// replica.
const LeaseName = "mandate-openreports"

// revisionPoll is how often the loop looks for a new bundle revision.
const revisionPoll = time.Second

// idlePerBusy: the loop waits at least this many times as long as an
// audit took before the next one (it decides every workload of the
// cluster, CPU that admissions need), whatever the interval.
const idlePerBusy = 4

// ErrNoPolicy: no revision is active yet, so there is nothing to audit.
var ErrNoPolicy = errors.New("no policy revision is active yet")

// Audits are the audits of one run: of the active revision and of the
// shadow candidate (nil without one).
type Audits struct {
	Active, Shadow *audit.Report
}

// Loop audits every workload and writes the Reports every Interval and
// whenever Revisions changes (a bundle activation, of the active revision
// or the shadow's).
type Loop struct {
	// Audit decides every governed workload now.
	Audit func(ctx context.Context) (Audits, error)
	// Revisions names the revisions Audit would decide with now.
	Revisions func() string
	Writer    Writer
	Interval  time.Duration
	// MaxResults caps the results of one Report (Options.MaxResults).
	MaxResults int
	// Ready, when set, is waited for before the first audit (serve's
	// cluster state synced).
	Ready func() bool
}

var _ manager.Runnable = (*Loop)(nil)

// Start runs until ctx ends: under leader election, when this replica
// loses the Lease (the next leader takes over the Reports as they are).
func (l *Loop) Start(ctx context.Context) error { return l.run(ctx, l.Once) }

// run runs once every interval and on each change of revisions.
func (l *Loop) run(ctx context.Context, once func(context.Context) (Written, error)) error {
	log := ctrl.LoggerFrom(ctx).WithName("openreports")
	interval := l.Interval
	if interval <= 0 {
		interval = config.DefaultOpenReportsInterval
	}
	for l.Ready != nil && !l.Ready() {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
	missing := false
	for {
		started := time.Now()
		audited := l.revisions()
		n, err := once(ctx)
		switch {
		case errors.Is(err, ErrNotInstalled):
			if !missing {
				log.Info("background audit writes no reports: " + err.Error())
			}
		case errors.Is(err, ErrNoPolicy):
			log.V(1).Info("background audit waits for a policy revision")
		case err != nil:
			log.Error(err, "background audit failed")
		default:
			log.V(1).Info("background audit written", "revisions", audited, "applied", n.Applied, "deleted", n.Deleted, "unchanged", n.Unchanged)
		}
		missing = errors.Is(err, ErrNotInstalled)
		took := time.Since(started)
		next := started.Add(max(interval, (idlePerBusy+1)*took))
		earliest := started.Add((idlePerBusy + 1) * took)
		for {
			wait := min(revisionPoll, time.Until(next))
			if wait <= 0 {
				break
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
			if l.revisions() != audited && !time.Now().Before(earliest) {
				log.V(1).Info("background audit of a new revision", "revisions", l.revisions())
				break
			}
		}
	}
}

func (l *Loop) revisions() string {
	if l.Revisions == nil {
		return ""
	}
	return l.Revisions()
}

// Once audits and writes the Reports once. ErrNotInstalled, before
// anything is decided, when the Report kind is not served.
func (l *Loop) Once(ctx context.Context) (Written, error) {
	if _, err := l.Writer.Existing(ctx); err != nil {
		return Written{}, err
	}
	a, err := l.Audit(ctx)
	if err != nil {
		return Written{}, err
	}
	reps := Build(a.Active, a.Shadow, Options{MaxResults: l.MaxResults, Now: time.Now()})
	logOmitted(ctx, reps)
	return l.Writer.Write(ctx, reps)
}

// logOmitted says which Reports were cut at their cap.
func logOmitted(ctx context.Context, reps []*v1alpha1.Report) {
	for _, r := range reps {
		if n := r.Annotations[AnnotationOmitted]; n != "" {
			ctrl.LoggerFrom(ctx).Info("report capped: its least severe results are left out", "namespace", r.Namespace,
				"omitted", n, "maxResults", r.Configuration.Limits.MaxResults)
		}
	}
}
