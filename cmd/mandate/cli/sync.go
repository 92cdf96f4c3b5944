package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/modelcheck"
	"github.com/mandate-dev/mandate/schedsync"
)

type syncOptions struct {
	policies        string
	bundle          string
	verificationKey string
	kubeconfig      string
	kubeContext     string
	schedulers      []string
	volcanoConfig   schedsync.VolcanoConfigMap
	dryRun          bool
	diff            bool
	check           bool
	output          string
	target          string
	slurm           slurmSyncOptions
}

func newSyncCommand() *cobra.Command {
	var o syncOptions
	cmd := &cobra.Command{
		Use:   "sync [--policies DIR | --bundle FILE] [--kubeconfig FILE] [--schedulers " + strings.Join(schedsync.AllSchedulers(), ",") + "] [--dry-run] [--diff] [--check] [-o table|json]",
		Short: "Configure the schedulers from the authority model: priority classes, queues, topologies",
		Long: `Render, from the authority model, the objects the admission directives name
— PriorityClasses for the tiers; Volcano Queues and HyperNodes; KAI Queues and
Topology; Kueue ResourceFlavors, Cohorts, ClusterQueues, LocalQueues,
WorkloadPriorityClasses and Topology — and apply them with server-side apply
under the field manager mandate-sync. Only objects labelled
app.kubernetes.io/managed-by=mandate and app.kubernetes.io/component=scheduler-config
are changed or pruned; a queue of a tenant the model no longer has is closed
while it still holds workloads, and deleted once empty.

For Volcano, sync also writes the scheduler's own configuration, the key
volcano-scheduler.conf of the ConfigMap --volcano-config-namespace/
--volcano-config-name (default volcano-system/volcano-scheduler-configmap):
actions that reclaim and preempt, and the gang plugin in the first tier so
that no eviction breaks a gang. A ConfigMap there that is not Mandate's (the
Volcano chart's) is never written: --check vets it, no drift when it keeps
the promise, else the reasons (see the README, "Preemption").

Without --schedulers, the schedulers the model's tenants use are configured.
--dry-run makes every write a server-side dry run; --diff prints what would
change and changes nothing (empty when the cluster matches); --check lists
every difference between model and cluster (missing objects, differing
fields, Mandate objects the model no longer has) and changes nothing.

With --target slurm, the same model configures a Slurm cluster instead
(sacctmgr and scontrol from PATH; SLURM_CONF names its configuration): one
account per tenant (Organization mandate) with GrpTRES=gres/gpu=<ceiling>,
gres/gpu:<product>=<ceiling> and Fairshare=<guarantee>, one QOS per priority
tier with Priority, Preempt and PreemptMode, and the files
mandate-partitions.conf (a partition per GPU product) and topology.conf
(switches from the topology levels) in --slurm-conf-dir, from the nodes of
--slurm-nodes; --dry-run there plans and changes nothing. See the README's
"Slurm" section.

Exit status: 0 when done (for --check: no drift), 1 when --check finds drift or
a write fails, 2 on bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSync(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.bundle, "bundle", "", "bundle to take the model from (.tar.gz, as mandate bundle build writes)")
	f.StringVar(&o.verificationKey, "bundle-verification-key", "", "PEM public key; when set, the bundle must be signed with it")
	f.StringVar(&o.policies, "policies", "", "policy directory to take the model from (default: the embedded default authority model)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to configure (default: $KUBECONFIG, or ~/.kube/config)")
	f.StringVar(&o.kubeContext, "context", "", "kubeconfig context (default: its current context)")
	f.StringSliceVar(&o.schedulers, "schedulers", nil, "schedulers to configure: "+strings.Join(schedsync.AllSchedulers(), ",")+" (default: those the model's tenants use)")
	f.StringVar(&o.volcanoConfig.Namespace, "volcano-config-namespace", schedsync.DefaultVolcanoConfigNamespace, "namespace of the ConfigMap Volcano's scheduler reads "+schedsync.VolcanoConfigKey+" from")
	f.StringVar(&o.volcanoConfig.Name, "volcano-config-name", schedsync.DefaultVolcanoConfigName, "name of the ConfigMap Volcano's scheduler reads "+schedsync.VolcanoConfigKey+" from")
	f.BoolVar(&o.dryRun, "dry-run", false, "server-side dry run: validate every write, change nothing")
	f.BoolVar(&o.diff, "diff", false, "print what would change, change nothing")
	f.BoolVar(&o.check, "check", false, "list every difference between model and cluster, change nothing; exit 1 when there is any")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	f.StringVar(&o.target, "target", targetKubernetes, "what to configure: kubernetes (the schedulers' objects) or slurm (accounts, QOS, partitions, topology.conf through sacctmgr and scontrol)")
	addSlurmSyncFlags(f, &o.slurm)
	return cmd
}

func runSync(ctx context.Context, out io.Writer, o syncOptions) error {
	bad := func(err error) error { return &exitError{code: exitBadInput, err: err} }
	if o.output != "table" && o.output != "json" {
		return bad(fmt.Errorf("--output %q: want table or json", o.output))
	}
	if o.policies != "" && o.bundle != "" {
		return bad(errors.New("give the model with at most one of --policies DIR or --bundle FILE"))
	}
	if (o.diff && o.check) || ((o.diff || o.check) && o.dryRun) {
		return bad(errors.New("--dry-run, --diff and --check exclude each other"))
	}
	policy, err := loadCandidate(auditOptions{policies: o.policies, bundle: o.bundle, verificationKey: o.verificationKey})
	if err != nil {
		return bad(err)
	}
	// The model is checked as activation checks it, and read once.
	if err := modelcheck.Validate(policy.Data); err != nil {
		return bad(err)
	}
	spec, err := model.FromData(policy.Data)
	if err != nil {
		return bad(err)
	}
	switch o.target {
	case targetKubernetes:
	case targetSlurm:
		return runSlurmSync(ctx, out, spec, o)
	default:
		return bad(fmt.Errorf("--target %q: want %s or %s", o.target, targetKubernetes, targetSlurm))
	}
	opts := schedsync.Options{Schedulers: o.schedulers, VolcanoConfigMap: o.volcanoConfig}
	if _, err := schedsync.Render(spec, schedsync.Cluster{}, opts); err != nil {
		return bad(err)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: o.kubeContext}).ClientConfig()
	if err != nil {
		return bad(fmt.Errorf("unable to read kubeconfig %s: %w", o.kubeconfig, err))
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return &exitError{code: exitDenied, err: fmt.Errorf("unable to connect to %s: %w", cfg.Host, err)}
	}
	s := schedsync.Syncer{Client: c}
	plan, err := s.PlanModel(ctx, spec, opts)
	if err != nil {
		return &exitError{code: exitDenied, err: err}
	}
	return o.finish(out, syncedPlan{
		json:  func(w io.Writer) error { return schedsync.WriteJSON(w, plan) },
		diff:  func(w io.Writer) error { return schedsync.WriteDiff(w, plan) },
		table: func(w io.Writer) error { return schedsync.WriteTable(w, plan) },
		drift: len(plan.Drift()),
		apply: func(dryRun bool) error { return s.Apply(ctx, plan, dryRun) },
	})
}

// syncedPlan is one target's plan as the sync command needs it: how to
// write it in each output format, how much of it is drift, how to apply it.
type syncedPlan struct {
	json, diff, table func(io.Writer) error
	drift             int
	apply             func(dryRun bool) error
}

// finish does what the flags ask with a target's plan, the same for every
// target: --diff or --check write it (and --check exits 1 on drift),
// otherwise it is applied (unless --dry-run) and written.
func (o syncOptions) finish(out io.Writer, p syncedPlan) error {
	write := func() error {
		switch {
		case o.output == "json":
			return p.json(out)
		case o.diff:
			return p.diff(out)
		}
		return p.table(out)
	}
	if o.diff || o.check {
		if err := write(); err != nil {
			return err
		}
		if o.check && p.drift > 0 {
			return &exitError{code: exitDenied}
		}
		return nil
	}
	if err := p.apply(o.dryRun); err != nil {
		return &exitError{code: exitDenied, err: err}
	}
	return write()
}
