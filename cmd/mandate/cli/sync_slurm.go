package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/schedsync/slurm"
	"github.com/mandate-dev/mandate/scheduler/facts"
)

// The targets of mandate sync: the Kubernetes schedulers' objects, or a
// Slurm cluster (the registry's name for Slurm).
const targetKubernetes = "kubernetes"

var targetSlurm = facts.Slurm.Name

type slurmSyncOptions struct {
	nodes   string
	cluster string
	confDir string
}

func addSlurmSyncFlags(f *pflag.FlagSet, o *slurmSyncOptions) {
	f.StringVar(&o.nodes, "slurm-nodes", "", "with --target slurm: the Slurm nodes as Kubernetes Node objects (YAML or JSON; their names are the Slurm node names, their labels name topology domains and GPU products)")
	f.StringVar(&o.cluster, "slurm-cluster", "", "with --target slurm: the ClusterName (default: scontrol show config's)")
	f.StringVar(&o.confDir, "slurm-conf-dir", "", "with --target slurm: where topology.conf and mandate-partitions.conf are written (default: the directory of $SLURM_CONF, else /etc/slurm)")
}

// readSlurmNodes reads the Node objects of a file as Slurm nodes.
func readSlurmNodes(path string) (slurm.Nodes, error) {
	nodes := slurm.Nodes{}
	if path == "" {
		return nodes, nil
	}
	err := cluster.EachFile(path, func(u *unstructured.Unstructured) error {
		if u.GetKind() == "Node" {
			nodes[u.GetName()] = u.GetLabels()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("unable to read --slurm-nodes: %w", err)
	}
	return nodes, nil
}

func runSlurmSync(ctx context.Context, out io.Writer, spec model.Model, o syncOptions) error {
	bad := func(err error) error { return &exitError{code: exitBadInput, err: err} }
	nodes, err := readSlurmNodes(o.slurm.nodes)
	if err != nil {
		return bad(err)
	}
	desired, err := slurm.Render(spec, nodes, slurm.Options{})
	if err != nil {
		return bad(err)
	}
	c := &slurm.Cluster{Name: o.slurm.cluster, ConfDir: o.slurm.confDir}
	plan, err := c.Plan(ctx, desired)
	if err != nil {
		return &exitError{code: exitDenied, err: err}
	}
	return o.finish(out, syncedPlan{
		json:  func(w io.Writer) error { return slurm.WriteJSON(w, plan) },
		diff:  func(w io.Writer) error { return slurm.WriteDiff(w, plan) },
		table: func(w io.Writer) error { return slurm.WriteTable(w, plan) },
		drift: len(plan.Drift()),
		apply: func(dryRun bool) error { return c.Apply(ctx, plan, dryRun) },
	})
}
