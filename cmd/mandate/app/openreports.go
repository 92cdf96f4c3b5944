package app

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/mandate-dev/mandate/audit"
	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/elected"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/openreports"
)

// openReports adds, when openReports.enabled, the background audit: on the
// holder of its Lease in Mandate's namespace (every replica when none is
// set), every governed workload listed from the API server and decided
// against the active revision and the shadow, written as OpenReports
// Reports every openReports.interval and on each activation.
func (s *Server) openReports(ctx context.Context, rc *rest.Config, c config.Serve) error {
	if !c.OpenReports.Enabled {
		return nil
	}
	scheme, err := openreports.Scheme()
	if err != nil {
		return err
	}
	cl, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("unable to create the OpenReports client: %w", err)
	}
	reader, skip := s.Manager.GetAPIReader(), exempt(c)
	decide := func(ctx context.Context, inv *inventory.Inventory, ev *evaluator.Evaluator) (*audit.Report, error) {
		return audit.Audit(ctx, inv, audit.Options{Decider: ev, Model: ev.Model(), Revision: ev.Revision(), Exempt: skip})
	}
	loop := &openreports.Loop{
		Audit: func(ctx context.Context) (openreports.Audits, error) {
			var a openreports.Audits
			ev := s.active()
			if ev == nil {
				return a, openreports.ErrNoPolicy
			}
			inv, err := inventory.List(ctx, reader, "cluster")
			if err != nil {
				return a, fmt.Errorf("unable to list the workloads to audit: %w", err)
			}
			if a.Active, err = decide(ctx, inv, ev); err != nil {
				return a, err
			}
			if sh := s.shadowEvaluator(); sh != nil {
				if a.Shadow, err = decide(ctx, inv, sh); err != nil {
					return a, err
				}
			}
			return a, nil
		},
		Revisions: func() string {
			rev := ""
			if ev := s.active(); ev != nil {
				rev = ev.Revision()
			}
			if sh := s.shadowEvaluator(); sh != nil {
				rev += " shadow " + sh.Revision()
			}
			return rev
		},
		Writer:     openreports.Writer{Client: cl},
		Interval:   c.OpenReports.Interval,
		MaxResults: c.OpenReports.MaxResults,
		Ready:      s.cacheSynced.Load,
	}
	var r manager.Runnable = loop
	if c.Namespace != "" {
		r = &elected.Runnable{Run: loop, Lease: openreports.LeaseName, What: "the background audit", Config: rc, Namespace: c.Namespace}
	} else {
		ctrl.LoggerFrom(ctx).Info("background audit runs without leader election: no namespace configured for its Lease")
	}
	if err := s.Manager.Add(r); err != nil {
		return fmt.Errorf("unable to add the background audit: %w", err)
	}
	return nil
}

// shadowEvaluator is the shadow revision active now; nil without one.
func (s *Server) shadowEvaluator() *evaluator.Evaluator {
	if s.Shadow == nil {
		return nil
	}
	return s.Shadow.Current()
}
