package authoritymetrics

import (
	"context"
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/audit"
	"github.com/mandate-dev/mandate/clusterreport"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/explain"
)

// ErrNoPolicy: no revision is active yet, so there is nothing to report.
var ErrNoPolicy = errors.New("no policy revision is active yet")

// FromCluster is a Loop's Report: the cluster report of what reader lists
// now (every governed workload, the schedulers' objects), decided by the
// revision current returns, with exempt namespaces left out.
func FromCluster(reader client.Reader, current func() *evaluator.Evaluator, exempt []string) func(context.Context) (*clusterreport.Report, error) {
	return func(ctx context.Context) (*clusterreport.Report, error) {
		ev := current()
		if ev == nil {
			return nil, ErrNoPolicy
		}
		// Only what the report counts of each Pod and Node is kept, and
		// only the workloads it could list as blocked are decided: the
		// whole cluster as unstructured objects would be gigabytes at
		// 150,000 pods.
		inv, err := audit.ListCounted(ctx, reader, "cluster")
		if err != nil {
			return nil, err
		}
		sched, err := explain.ListSchedulerState(ctx, reader, "")
		if err != nil {
			return nil, err
		}
		return clusterreport.Build(ctx, inv, sched, clusterreport.Options{
			Options: explain.Options{Decider: ev, Model: ev.Model(), Revision: ev.Revision(), Exempt: exempt},
			Data:    ev.Data(),
		})
	}
}
