package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/simulate/openb"
	"github.com/mandate-dev/mandate/simulate/replay"
)

type simulateRunOptions struct {
	trace, openbPods    string
	cluster, openbNodes string
	policies, bundle    string
	candidate           string
	placement, events   string
	seed                uint64
	sampleEvery         float64
	failIf              []string
	output              string
	kubeconfig          string
	kubeContext         string
	startingState       bool
	startingRemaining   float64
	referenceNodes      int
}

func newSimulateRunCommand() *cobra.Command {
	o := simulateRunOptions{placement: replay.PlacementTopology}
	cmd := &cobra.Command{
		Use:   "run (--trace FILE | --openb-pods FILE) (--cluster FILE [--starting-state] | --openb-nodes FILE | --kubeconfig FILE | --reference-nodes N) [--policies DIR | --bundle FILE] [--candidate DIR|FILE] [--events FILE] [--fail-if EXPR]… [-o table|json|html]",
		Short: "Replay a demand trace over simulated time through the authority model",
		Long: `Replay a demand trace over simulated time on a simulated cluster, every
arrival decided by Mandate's own decision service under the policy (the
embedded default authority model without --policies or --bundle), and
report per tenant: admitted, denied (by rule), completed, never started
(held by authority or capacity), wait p50/p95/max, GPU-hours used and
guaranteed, preemptions and GPU-hours lost; and the cluster's allocated,
idle and stranded GPU-hours. With --candidate (a policy directory or a
bundle) the same trace is replayed under it too and the changes printed.
The trace format and the scheduling model are in docs/simulate.md.

--fail-if METRIC[TENANT] OP VALUE (repeatable) exits 1 when it holds, e.g.
  'wait.p95[research-llm] > +20%'  'denied[guaranteed] > 0'  'stranded_gpu_hours > +10%'

Exit status: 0, 1 when a --fail-if holds, 2 on bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitStatus(runSimulateRun(cmd.Context(), cmd.OutOrStdout(), o))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.trace, "trace", "", "trace in Mandate's format: JSON lines (.jsonl) or CSV (.csv)")
	f.StringVar(&o.openbPods, "openb-pods", "", "trace as an Alibaba GPU v2023 (openb) pod list CSV, mapped onto the model's leaf tenants")
	f.StringVar(&o.cluster, "cluster", "", "the cluster's nodes and namespaces: a snapshot as mandate eval --cluster reads (its pods are not replayed)")
	f.StringVar(&o.openbNodes, "openb-nodes", "", "the cluster as an openb node list CSV")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "the cluster read live: its nodes and namespaces, and its running pods and admitted workloads as the starting state")
	f.StringVar(&o.kubeContext, "context", "", "the kubeconfig context (default: its current one)")
	f.IntVar(&o.referenceNodes, "reference-nodes", 0, "the cluster as the synthetic reference topology of this many empty 8-GPU nodes (12500: make bench's 100k GPUs), with its tenant-NNNN namespaces")
	f.BoolVar(&o.startingState, "starting-state", false, "with --cluster: its pods and admitted workloads are the starting state")
	f.Float64Var(&o.startingRemaining, "starting-remaining", 0, "seconds the starting state's pods still run (default: to the end)")
	f.StringVar(&o.policies, "policies", "", "policy directory (default: the embedded default authority model)")
	f.StringVar(&o.bundle, "bundle", "", "policy bundle (.tar.gz, as mandate bundle build writes)")
	f.StringVar(&o.candidate, "candidate", "", "a second revision to compare: a policy directory or a bundle (.tar.gz)")
	f.StringVar(&o.placement, "placement", o.placement, "placement policy: "+strings.Join(replay.PlacementNames(), ", "))
	f.StringVar(&o.events, "events", "", "node failures and repairs, JSON lines {\"at\":SECONDS,\"node\":NAME,\"action\":\"fail\"|\"repair\"}")
	f.Uint64Var(&o.seed, "seed", 42, "seed of the placement policies' draws among equals")
	f.Float64Var(&o.sampleEvery, "sample-every", 0, "seconds between samples of the cluster (default: the trace's span / 200)")
	f.StringArrayVar(&o.failIf, "fail-if", nil, "exit 1 when this holds, e.g. 'wait.p95[research-llm] > +20%' (repeatable)")
	addOutputFlag(cmd, &o.output, outputTable, outputJSON, outputHTML)
	return cmd
}

func loadRevision(policiesDir, bundle string) (*evaluator.Policy, error) {
	if bundle != "" {
		return bundles.Load(bundle, nil)
	}
	return loadPolicy(policiesDir)
}

func runSimulateRun(ctx context.Context, out io.Writer, o simulateRunOptions) (int, error) {
	if (o.trace == "") == (o.openbPods == "") {
		return 0, errors.New("give one trace: --trace or --openb-pods")
	}
	if n := btoi(o.cluster != "") + btoi(o.openbNodes != "") + btoi(o.kubeconfig != "") + btoi(o.referenceNodes > 0); n != 1 {
		return 0, errors.New("give one cluster: --cluster, --openb-nodes, --kubeconfig or --reference-nodes")
	}
	if o.startingState && o.cluster == "" {
		return 0, errors.New("--starting-state takes the pods of --cluster; --kubeconfig always starts from the live cluster")
	}
	if o.bundle != "" && o.policies != "" {
		return 0, errors.New("--bundle and --policies both name the policy: give one")
	}
	var checks []replay.FailIf
	for _, text := range o.failIf {
		f, err := replay.ParseFailIf(text)
		if err != nil {
			return 0, err
		}
		checks = append(checks, f)
	}
	var supply replay.Supply
	if o.referenceNodes > 0 {
		supply = replay.Reference(o.referenceNodes)
	} else if o.cluster != "" || o.kubeconfig != "" {
		var inv *inventory.Inventory
		var err error
		if o.cluster != "" {
			inv, err = inventory.ReadCluster(o.cluster)
		} else {
			inv, err = inventory.ListKubeconfig(ctx, o.kubeconfig, o.kubeContext)
		}
		if err != nil {
			return 0, err
		}
		if supply, err = replay.FromSnapshot(inv.Nodes, inv.Namespaces); err != nil {
			return 0, err
		}
		if o.startingState || o.kubeconfig != "" {
			if supply, err = supply.WithStartingState(inv.Pods, inv.Owners); err != nil {
				return 0, err
			}
		}
	} else {
		rows, err := openb.ReadNodesFile(o.openbNodes)
		if err != nil {
			return 0, err
		}
		supply = replay.FromOpenbNodes(rows)
	}
	var events []replay.NodeEvent
	if o.events != "" {
		var err error
		if events, err = replay.ReadEventsFile(o.events); err != nil {
			return 0, err
		}
	}
	var jobs []replay.Job // read once, an openb list mapped with the baseline's model
	simulate := func(policy *evaluator.Policy) (*replay.Report, error) {
		ev, err := evaluator.New(ctx, policy, offlineEvaluation)
		if err != nil {
			return nil, fmt.Errorf("unable to prepare the policy: %w", err)
		}
		if jobs == nil {
			if jobs, err = readJobs(o, ev); err != nil {
				return nil, err
			}
		}
		return replay.Run(ctx, jobs, supply, replay.Options{Decider: ev, Model: ev.Model(), Revision: ev.Revision(),
			Placement: o.placement, Seed: o.seed, Events: events, SampleEvery: o.sampleEvery, StartingRemaining: o.startingRemaining})
	}
	policy, err := loadRevision(o.policies, o.bundle)
	if err != nil {
		return 0, err
	}
	outcome := &replay.Outcome{}
	if outcome.Baseline, err = simulate(policy); err != nil {
		return 0, err
	}
	if o.candidate != "" {
		var cand *evaluator.Policy
		if strings.HasSuffix(o.candidate, ".tar.gz") {
			cand, err = loadRevision("", o.candidate)
		} else {
			cand, err = loadRevision(o.candidate, "")
		}
		if err != nil {
			return 0, fmt.Errorf("candidate: %w", err)
		}
		if outcome.Candidate, err = simulate(cand); err != nil {
			return 0, err
		}
		outcome.Compare()
	}
	if err := outcome.Check(checks); err != nil {
		return 0, err
	}
	switch o.output {
	case outputJSON:
		err = replay.WriteJSON(out, outcome)
	case outputHTML:
		err = replay.WriteHTML(out, outcome)
	default:
		err = replay.WriteTable(out, outcome)
	}
	if err != nil {
		return 0, err
	}
	if len(outcome.FailIf) > 0 {
		return exitDenied, nil
	}
	return exitAdmitted, nil
}

// readJobs reads the trace; an openb pod list is mapped onto the model's
// tenants (the model of the revision it is replayed under).
func readJobs(o simulateRunOptions, ev *evaluator.Evaluator) ([]replay.Job, error) {
	if o.trace != "" {
		return replay.ReadTraceFile(o.trace)
	}
	pods, err := openb.ReadPodsFile(o.openbPods)
	if err != nil {
		return nil, err
	}
	return replay.FromOpenb(pods, ev.Model())
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
