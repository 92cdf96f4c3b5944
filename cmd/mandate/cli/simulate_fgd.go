package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mandate-dev/mandate/simulate/alloc"
	"github.com/mandate-dev/mandate/simulate/fgd"
	"github.com/mandate-dev/mandate/simulate/openb"
	"github.com/mandate-dev/mandate/simulate/placement"
)

type simulateFGDOptions struct {
	pods, nodes string
	policy      string
	seeds       []int64
	inflate     float64
	output      string
}

func newSimulateFGDCommand() *cobra.Command {
	o := simulateFGDOptions{policy: "best-fit", inflate: fgd.DefaultInflate}
	o.seeds, _ = fgd.ParseSeeds(fgd.DefaultSeeds)
	var policies strings.Builder
	for _, p := range placement.Policies {
		fmt.Fprintf(&policies, "  %-9s %s\n", p.Name, p.Help)
	}
	cmd := &cobra.Command{
		Use:   "fgd --pods FILE --nodes FILE [--policy " + strings.Join(placement.Names(), "|") + "] [--seeds 42-51] [--inflate 1.3] [-o table|json|yaml]",
		Short: "Replay the FGD paper's fragmentation protocol on a node and pod list",
		Long: `Replay the evaluation protocol of "Beware of Fragmentation: Scheduling
GPU-Sharing Workloads with Fragmentation Gradient Descent" (Weng et al.,
USENIX ATC'23) on a node list and a pod list in the Alibaba GPU trace v2023
("openb") CSV format. For each seed, on the empty cluster, the pod list
arrives in an order shuffled by the seed, then further pods drawn from it at
random (with replacement), until the arrived GPU demand reaches --inflate
times the cluster's GPUs. Each pod is placed by the policy, whole GPUs or a
share of one GPU (gpu_milli), within the node's CPU and memory and the GPU
types its gpu_spec allows, or fails; nothing departs. After each whole
percent of arrived GPU demand the GPUs allocated are recorded (a share
counts by its fraction), as a percent of all GPUs: -o json prints every
point with its mean, min and max over the seeds; the table every tenth.

Policies:
` + policies.String() + `
Exit status: 0 when the protocol ran, 2 on bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitStatus(exitAdmitted, runSimulateFGD(cmd.Context(), cmd.OutOrStdout(), o))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.pods, "pods", "", "pod list CSV (name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, …)")
	f.StringVar(&o.nodes, "nodes", "", "node list CSV (sn, cpu_milli, memory_mib, gpu, model)")
	f.Var(&policyValue{&o.policy}, "policy", "placement policy: "+strings.Join(placement.Names(), ", "))
	f.Var(&seedsValue{&o.seeds}, "seeds", "seeds, one run each: a range such as 42-51, or a comma-separated list")
	f.Float64Var(&o.inflate, "inflate", o.inflate, "arrivals stop when their GPU demand reaches this multiple of the cluster's GPUs")
	addOutputFlag(cmd, &o.output)
	_ = cmd.MarkFlagRequired("pods")
	_ = cmd.MarkFlagRequired("nodes")
	_ = cmd.RegisterFlagCompletionFunc("policy", cobra.FixedCompletions(placement.Names(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runSimulateFGD(ctx context.Context, out io.Writer, o simulateFGDOptions) error {
	nodes, err := openb.ReadNodesFile(o.nodes)
	if err != nil {
		return err
	}
	pods, err := openb.ReadPodsFile(o.pods)
	if err != nil {
		return err
	}
	specs := make([]alloc.NodeSpec, len(nodes))
	for i, n := range nodes {
		specs[i] = n.Spec()
	}
	tasks := make([]alloc.Request, len(pods))
	for i, p := range pods {
		tasks[i] = p.Request()
	}
	res, err := fgd.Run(ctx, specs, tasks, fgd.Options{Policy: o.policy, Seeds: o.seeds, Inflate: o.inflate})
	if err != nil {
		return err
	}
	if o.output == outputTable {
		return fgd.WriteTable(out, res)
	}
	return writeStructured(out, o.output, res)
}

// policyValue is --policy, checked against the registered policies as it
// is parsed.
type policyValue struct{ name *string }

func (v *policyValue) String() string { return *v.name }
func (v *policyValue) Type() string   { return "policy" }
func (v *policyValue) Set(s string) error {
	if !slices.Contains(placement.Names(), s) {
		return fmt.Errorf("want %s", strings.Join(placement.Names(), ", "))
	}
	*v.name = s
	return nil
}

// seedsValue is --seeds.
type seedsValue struct{ seeds *[]int64 }

func (v *seedsValue) String() string { return fgd.SeedsText(*v.seeds) }
func (v *seedsValue) Type() string   { return "seeds" }
func (v *seedsValue) Set(s string) error {
	seeds, err := fgd.ParseSeeds(s)
	if err != nil {
		return err
	}
	*v.seeds = seeds
	return nil
}
