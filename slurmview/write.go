package slurmview

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable prints one line per job: its Slurm state and reason, the
// dimension holding it, the limit and the current value, then the
// messages.
func WriteTable(w io.Writer, es []Explanation) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SLURM JOB\tACCOUNT\tQOS\tSTATE\tREASON\tDIMENSION\tLIMIT\tCURRENT")
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Job.ID, e.Job.Account, e.Job.QOS, e.Job.State, e.Job.Reason,
			dash(e.Dimension), dash(e.Limit), dash(e.Current))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range es {
		if e.Verdict == VerdictWaits {
			if _, err := fmt.Fprintf(w, "\n%s\n", e.Message); err != nil {
				return err
			}
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
