package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/mandate-dev/mandate/clusterreport"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/explain"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/scheduler/facts"
)

const outputHTML = "html"

func newReportCommand() *cobra.Command {
	var o auditOptions
	var slurmView bool
	cmd := &cobra.Command{
		Use:   "report [--kubeconfig FILE | --snapshot FILE | --slurm] [-o table|json|html]",
		Short: "Report idle GPUs next to blocked work, and the authority that blocks it",
		Long: `Report, for the whole cluster: per tenant (rolled up the hierarchy) the
guarantee, ceiling, used and idle-within-guarantee GPUs and the pending demand
with the dimension and rule that blocks it; per GPU resource and product the
free, stranded (free, but no blocked gang could use them at its required
level), unhealthy and unavailable GPUs; and the headline: idle GPUs while work
is blocked, and by which authority. Every workload is decided again as
mandate explain does. -o html writes one self-contained page with plots.

Live through a kubeconfig (default: $KUBECONFIG or ~/.kube/config), or offline
from a --snapshot file. Exit 0 when nothing is blocked, 1 when work is blocked
while GPUs sit idle, 2 on bad input.

With --slurm, the report is of the Slurm cluster SLURM_CONF names (squeue and
scontrol on PATH): every job with Slurm's pending reason attributed to the
authority dimension that holds it, and for a quota reason the account's
GrpTRES limit and the GPUs in use; exit 1 when any job waits.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if slurmView {
				return exitStatus(runSlurmReport(cmd.Context(), cmd.OutOrStdout(), o.output))
			}
			return exitStatus(runReport(cmd.Context(), cmd.OutOrStdout(), o))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.policies, "policies", "", "policy directory (default: the embedded default authority model)")
	f.StringVar(&o.bundle, "bundle", "", "policy bundle (.tar.gz) instead of --policies")
	f.StringVar(&o.snapshot, "snapshot", "", "cluster snapshot file instead of a live cluster")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.kubeContext, "context", "", "kubeconfig context (default: its current context)")
	f.StringSliceVar(&o.exempt, "exempt-namespace", nil, "namespaces Mandate does not govern, beside kube-system, kube-public and kube-node-lease")
	f.BoolVar(&slurmView, facts.Slurm.Name, false, "report the Slurm cluster's jobs (squeue's reasons by authority dimension) instead")
	addOutputFlag(cmd, &o.output, outputTable, outputJSON, outputHTML)
	return cmd
}

func runReport(ctx context.Context, out io.Writer, o auditOptions) (int, error) {
	if o.bundle != "" && o.policies != "" {
		return 0, errors.New("--bundle and --policies both name a policy: give one")
	}
	if o.snapshot != "" && o.kubeconfig != "" {
		return 0, errors.New("give the cluster with one of --snapshot FILE or --kubeconfig FILE")
	}
	policy, err := loadCandidate(o)
	if err != nil {
		return 0, err
	}
	ev, err := evaluator.New(ctx, policy, offlineEvaluation)
	if err != nil {
		return 0, fmt.Errorf("unable to prepare the policy: %w", err)
	}
	inv, sched, err := readCluster(ctx, o, "")
	if err != nil {
		return 0, err
	}
	rep, err := clusterreport.Build(ctx, inv, sched, clusterreport.Options{
		Options: explain.Options{Decider: ev, Model: ev.Model(), Revision: ev.Revision(), Exempt: o.exempt},
	})
	if err != nil {
		return 0, err
	}
	switch o.output {
	case outputJSON:
		err = clusterreport.WriteJSON(out, rep)
	case outputHTML:
		err = clusterreport.WriteHTML(out, rep)
	default:
		err = clusterreport.WriteTable(out, rep)
	}
	if err != nil {
		return 0, err
	}
	if rep.BlockedWorkloads > 0 {
		return exitDenied, nil
	}
	return exitAdmitted, nil
}

// readCluster reads the inventory and the schedulers' objects from a
// snapshot or a live cluster; namespace limits the scheduler objects
// listed live ("" all).
func readCluster(ctx context.Context, o auditOptions, namespace string) (*inventory.Inventory, *explain.SchedulerState, error) {
	if o.snapshot != "" {
		inv, err := inventory.ReadCluster(o.snapshot)
		if err != nil {
			return nil, nil, err
		}
		f, err := os.Open(o.snapshot)
		if err != nil {
			return nil, nil, fmt.Errorf("unable to read cluster snapshot: %w", err)
		}
		defer f.Close()
		sched, err := explain.ReadSchedulerState(f)
		return inv, sched, err
	}
	c, host, _, err := kubeClient(o.kubeconfig, o.kubeContext)
	if err != nil {
		return nil, nil, err
	}
	inv, err := inventory.List(ctx, c, "cluster "+host)
	if err != nil {
		return nil, nil, err
	}
	sched, err := explain.ListSchedulerState(ctx, c, namespace)
	return inv, sched, err
}
