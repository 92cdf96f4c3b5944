package cli

import (
	"context"
	"io"

	"github.com/mandate-dev/mandate/schedsync/slurm"
	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/slurmview"
)

// slurmKind is explain's KIND of a Slurm job: slurm/JOBID.
var slurmKind = facts.Slurm.Name

func runSlurmExplain(ctx context.Context, out io.Writer, id, output string) (int, error) {
	es, err := slurmview.Explain(ctx, slurm.Exec, id)
	if err != nil {
		return 0, err
	}
	switch output {
	case outputJSON, outputYAML:
		if err := writeStructured(out, output, es[0]); err != nil {
			return 0, err
		}
	default:
		if err := slurmview.WriteTable(out, es); err != nil {
			return 0, err
		}
	}
	if es[0].Verdict == slurmview.VerdictWaits {
		return exitDenied, nil
	}
	return exitAdmitted, nil
}

// runSlurmReport prints every Slurm job with the dimension holding it.
func runSlurmReport(ctx context.Context, out io.Writer, output string) (int, error) {
	es, err := slurmview.Explain(ctx, slurm.Exec)
	if err != nil {
		return 0, err
	}
	if output == outputJSON {
		if err := writeStructured(out, output, es); err != nil {
			return 0, err
		}
	} else if err := slurmview.WriteTable(out, es); err != nil {
		return 0, err
	}
	for _, e := range es {
		if e.Verdict == slurmview.VerdictWaits {
			return exitDenied, nil
		}
	}
	return exitAdmitted, nil
}
