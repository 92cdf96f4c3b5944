package schedsync

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mandate-dev/mandate/model"
)

var (
	driftObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mandate_sync_drift_objects",
		Help: "Scheduler objects (by kind) that differed from the authority model at the last sync: missing, differing, to be closed or pruned, or not Mandate's.",
	}, []string{"kind"})
	applies = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mandate_sync_applies_total",
		Help: "Scheduler objects written by the sync, by action (create, update, recreate, close, delete).",
	}, []string{"action"})
	syncErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mandate_sync_errors_total",
		Help: "Syncs of the schedulers' configuration that failed.",
	})
)

func init() {
	metrics.Registry.MustRegister(driftObjects, applies, syncErrors)
}

// Reconciler is the sync run inside serve: on the leader, on every
// interval and whenever SetModel hands it a new model, it plans the
// schedulers' configuration and, unless it only reports, applies it.
type Reconciler struct {
	Syncer Syncer
	// Interval between runs.
	Interval time.Duration
	// ReportOnly counts and logs the drift without correcting it.
	ReportOnly bool
	// Options are the render options (schedulers; nil: the model's).
	Options Options

	mu       sync.Mutex
	model    *model.Model
	revision string
	kick     chan struct{}
	once     sync.Once
}

var (
	_ manager.Runnable               = (*Reconciler)(nil)
	_ manager.LeaderElectionRunnable = (*Reconciler)(nil)
)

// NeedLeaderElection is true: one replica configures the schedulers.
func (r *Reconciler) NeedLeaderElection() bool { return true }

func (r *Reconciler) init() { r.once.Do(func() { r.kick = make(chan struct{}, 1) }) }

// SetModel hands the reconciler the model of a newly activated revision
// (decoded and checked at its activation) and asks for a run.
func (r *Reconciler) SetModel(m model.Model, revision string) {
	r.init()
	r.mu.Lock()
	r.model, r.revision = &m, revision
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Start runs until ctx ends: once at once, then every Interval and on
// every SetModel. A failed run is logged and counted; the next one retries.
func (r *Reconciler) Start(ctx context.Context) error {
	r.init()
	log := ctrl.LoggerFrom(ctx).WithName("schedsync")
	ctx = ctrl.LoggerInto(ctx, log)
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		if err := r.RunOnce(ctx); err != nil {
			syncErrors.Inc()
			log.Error(err, "scheduler sync failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-r.kick:
		}
	}
}

// RunOnce plans (and unless ReportOnly, applies) the current model once.
func (r *Reconciler) RunOnce(ctx context.Context) error {
	r.mu.Lock()
	m, revision := r.model, r.revision
	r.mu.Unlock()
	if m == nil {
		return fmt.Errorf("no model to sync yet")
	}
	log := ctrl.LoggerFrom(ctx).WithValues("revision", revision)
	plan, err := r.Syncer.PlanModel(ctx, *m, r.Options)
	if err != nil {
		return err
	}
	byKind := map[string]float64{}
	for _, k := range kinds() {
		byKind[k.GVK.Kind+"."+k.GVK.Group] = 0
	}
	// And the kinds sync writes but never prunes (Volcano's scheduler
	// ConfigMap), so their gauge drops once they no longer differ.
	for _, c := range plan.Changes {
		byKind[qualifiedKind(c)] += 0
	}
	for _, c := range plan.Drift() {
		byKind[qualifiedKind(c)]++
		if r.ReportOnly {
			log.Info("scheduler configuration differs from the model", "action", string(c.Action), "kind", qualifiedKind(c),
				"namespace", c.Namespace, "name", c.Name, "fields", c.Fields, "detail", c.Detail)
		}
	}
	for k, n := range byKind {
		driftObjects.WithLabelValues(k).Set(n)
	}
	if r.ReportOnly || len(plan.Drift()) == 0 {
		return nil
	}
	if err := r.Syncer.Apply(ctx, plan, false); err != nil {
		return err
	}
	for _, c := range plan.Drift() {
		if c.Action != Foreign {
			applies.WithLabelValues(string(c.Action)).Inc()
			log.Info("scheduler configuration corrected", "action", string(c.Action), "kind", qualifiedKind(c),
				"namespace", c.Namespace, "name", c.Name, "fields", c.Fields)
			continue
		}
		log.Info("scheduler configuration differs from the model and is not Mandate's: left alone", "kind", qualifiedKind(c),
			"namespace", c.Namespace, "name", c.Name, "fields", c.Fields, "detail", c.Detail)
	}
	// What was corrected no longer differs.
	for k := range byKind {
		driftObjects.WithLabelValues(k).Set(0)
	}
	for _, c := range plan.Drift() {
		if c.Action == Foreign {
			driftObjects.WithLabelValues(qualifiedKind(c)).Inc()
		}
	}
	return nil
}
