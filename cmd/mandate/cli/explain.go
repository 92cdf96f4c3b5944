package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/explain"
	"github.com/mandate-dev/mandate/inventory"
)

type explainOptions struct {
	auditOptions
}

func newExplainCommand() *cobra.Command {
	var o explainOptions
	cmd := &cobra.Command{
		Use:   "explain KIND/NAME [-n NS] [--kubeconfig FILE | --snapshot FILE] [-o table|json|yaml]",
		Short: "Say why a workload runs or waits now, and what would let it run",
		Long: `Decide one workload (admitted or not) again against the cluster as it is now,
with its own pods taken out, and print each authority dimension's verdict with
its limit and current value, the directives it carries, the scheduler's view
of it (PodGroup phase and conditions, its Queue's state, capacity and
allocation, Kueue Workload conditions, where those kinds are served), and for
everything that blocks it the rule, the limit, the current value and the
change that would let it run.

Live through a kubeconfig (default: $KUBECONFIG or ~/.kube/config), or offline
from a --snapshot file (the format of mandate audit; PodGroups, Queues and
Kueue Workloads in it are read too). As the kubectl plugin: link the binary as
kubectl-mandate on PATH and run kubectl mandate explain job/NAME -n NS.

For a Slurm job, KIND is slurm and NAME its job id (mandate explain
slurm/1234, with squeue and scontrol on PATH): Slurm's own view — its state
and pending reason — attributed to the authority dimension that holds it
(AssocGrpGRES and other association or QOS limits: quota, with the account's
GrpTRES limit and the GPUs in use; Priority: priority; Resources: topology).

For a Slurm batch script not yet submitted, KIND is sbatch and NAME its path
(mandate explain sbatch/train.sbatch --snapshot FILE): the script is
explained as the Kubernetes Job mandate eval decides it as, against the
cluster as it is now.

Exit status: 0 when it can run now, 1 when something blocks it, 2 on bad
input (no such workload, bad flags).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exitStatus(runExplain(cmd.Context(), cmd.OutOrStdout(), args[0], o))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.policies, "policies", "", "policy directory (default: the embedded default authority model)")
	f.StringVar(&o.bundle, "bundle", "", "policy bundle (.tar.gz) instead of --policies")
	f.StringVar(&o.snapshot, "snapshot", "", "cluster snapshot file instead of a live cluster")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.kubeContext, "context", "", "kubeconfig context (default: its current context)")
	f.StringVarP(&o.namespace, "namespace", "n", "", "the workload's namespace (default: the context's, or default)")
	f.StringSliceVar(&o.exempt, "exempt-namespace", nil, "namespaces Mandate does not govern, beside kube-system, kube-public and kube-node-lease")
	addOutputFlag(cmd, &o.output)
	return cmd
}

func runExplain(ctx context.Context, out io.Writer, arg string, o explainOptions) (int, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok || kind == "" || name == "" {
		return 0, fmt.Errorf("want KIND/NAME (e.g. job/pretrain), got %q", arg)
	}
	if kind == slurmKind {
		return runSlurmExplain(ctx, out, name, o.output)
	}
	if o.bundle != "" && o.policies != "" {
		return 0, errors.New("--bundle and --policies both name a policy: give one")
	}
	if o.snapshot != "" && o.kubeconfig != "" {
		return 0, errors.New("give the cluster with one of --snapshot FILE or --kubeconfig FILE")
	}
	policy, err := loadCandidate(o.auditOptions)
	if err != nil {
		return 0, err
	}
	ev, err := evaluator.New(ctx, policy, offlineEvaluation)
	if err != nil {
		return 0, fmt.Errorf("unable to prepare the policy: %w", err)
	}
	var inv *inventory.Inventory
	var sched *explain.SchedulerState
	ns := o.namespace
	if o.snapshot != "" {
		if ns == "" {
			ns = "default"
		}
		if inv, err = inventory.ReadCluster(o.snapshot); err != nil {
			return 0, err
		}
		f, err := os.Open(o.snapshot)
		if err != nil {
			return 0, fmt.Errorf("unable to read cluster snapshot: %w", err)
		}
		defer f.Close()
		if sched, err = explain.ReadSchedulerState(f); err != nil {
			return 0, err
		}
	} else {
		c, host, kubeNS, err := kubeClient(o.kubeconfig, o.kubeContext)
		if err != nil {
			return 0, err
		}
		if ns == "" {
			ns = kubeNS
		}
		if inv, err = inventory.List(ctx, c, "cluster "+host); err != nil {
			return 0, err
		}
		if sched, err = explain.ListSchedulerState(ctx, c, ns); err != nil {
			return 0, err
		}
	}
	if kind == sbatchKind {
		// A batch script is explained as the Job it is decided as, added
		// to the cluster as it is now.
		if kind, ns, name, err = addSbatchJob(name, ev.Model(), inv, ns); err != nil {
			return 0, err
		}
	}
	e, err := explain.Explain(ctx, inv, sched, explain.Target{Kind: kind, Namespace: ns, Name: name}, explain.Options{
		Decider: ev, Model: ev.Model(), Revision: ev.Revision(), Exempt: o.exempt,
	})
	if err != nil {
		return 0, err
	}
	switch o.output {
	case outputJSON, outputYAML:
		err = writeStructured(out, o.output, e)
	default:
		err = explain.WriteText(out, e)
	}
	if err != nil {
		return 0, err
	}
	if !e.CanRunNow {
		return exitDenied, nil
	}
	return exitAdmitted, nil
}

// kubeClient connects through a kubeconfig the way kubectl finds one, and
// returns the client, the server and the context's namespace.
func kubeClient(path, kubeContext string) (client.Client, string, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", "", fmt.Errorf("unable to read kubeconfig %s: %w", path, err)
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, "", "", fmt.Errorf("unable to connect to %s: %w", cfg.Host, err)
	}
	return c, cfg.Host, ns, nil
}
