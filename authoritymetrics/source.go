package authoritymetrics

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/clusterreport"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/explain"
	"github.com/mandate-dev/mandate/inventory"
)

func heldNow(ctx context.Context, held Held) ([]*cluster.PodFacts, []*corev1.Node, bool) {
	if held == nil {
		return nil, nil, false
	}
	return held(ctx)
}

// ErrNoPolicy: no revision is active yet, so there is nothing to report.
var ErrNoPolicy = errors.New("no policy revision is active yet")

// FromCluster is a Loop's Report: the cluster report of what reader lists
// now (every governed workload, the schedulers' objects), decided by the
// revision current returns, with exempt namespaces left out.
func FromCluster(reader client.Reader, current func() *evaluator.Evaluator, exempt []string) func(context.Context) (*clusterreport.Report, error) {
	return FromClusterHeld(reader, nil, current, exempt)
}

// Held reads the Pods and Nodes serve's informers hold (cluster.PodFacts
// and stripped Nodes, what inventory.ListCounted keeps of them); ok false when
// they cannot be read, and then they are listed.
type Held func(ctx context.Context) (pods []*cluster.PodFacts, nodes []*corev1.Node, ok bool)

// FromClusterHeld is FromCluster reading the Pods and Nodes from held, when
// set and ok: serve's own objects, shared, instead of a listing of the
// whole cluster's pods and a copy of each, once a report (at 150,000 pods,
// about 120 MiB more at each report's peak, and the CPU of decoding them).
func FromClusterHeld(reader client.Reader, held Held, current func() *evaluator.Evaluator, exempt []string) func(context.Context) (*clusterreport.Report, error) {
	return func(ctx context.Context) (*clusterreport.Report, error) {
		ev := current()
		if ev == nil {
			return nil, ErrNoPolicy
		}
		// Only what the report counts of each Pod and Node is kept, and
		// only the workloads it could list as blocked are decided: the
		// whole cluster as unstructured objects would be gigabytes at
		// 150,000 pods.
		var (
			inv *inventory.Inventory
			err error
		)
		if pods, nodes, ok := heldNow(ctx, held); ok {
			inv, err = inventory.ListCountedHeld(ctx, reader, "cluster", pods, nodes)
		} else {
			inv, err = inventory.ListCounted(ctx, reader, "cluster")
		}
		if err != nil {
			return nil, err
		}
		sched, err := explain.ListSchedulerState(ctx, reader, "")
		if err != nil {
			return nil, err
		}
		return clusterreport.Build(ctx, inv, sched, clusterreport.Options{
			Options: explain.Options{Decider: ev, Model: ev.Model(), Revision: ev.Revision(), Exempt: exempt},
		})
	}
}
