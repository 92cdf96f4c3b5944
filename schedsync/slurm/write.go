package slurm

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints one line per change and field; "in sync" when none.
func WriteTable(w io.Writer, p Plan) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(p.Changes) == 0 {
		fmt.Fprintf(tw, "slurm cluster %s: in sync with the model\n", p.Cluster)
	}
	for _, c := range p.Changes {
		if len(c.Fields) == 0 || c.Kind == KindFile {
			fmt.Fprintf(tw, "%s\t%s\t%s\t\n", c.Action, c.Kind, c.Name)
			continue
		}
		for _, f := range c.Fields {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s: %q -> %q\n", c.Action, c.Kind, c.Name, f.Name, f.Have, f.Want)
		}
	}
	for _, u := range p.Unexpressed {
		fmt.Fprintf(tw, "not expressed in Slurm: %s\n", u)
	}
	return tw.Flush()
}

// WriteDiff prints what would change as a unified-style diff per field
// and file; nothing when the cluster matches.
func WriteDiff(w io.Writer, p Plan) error {
	for _, c := range p.Changes {
		fmt.Fprintf(w, "--- %s %s (slurm cluster %s)\n+++ %s %s (model)\n", c.Kind, c.Name, p.Cluster, c.Kind, c.Name)
		for _, f := range c.Fields {
			if c.Kind == KindFile {
				for _, l := range strings.Split(strings.TrimSuffix(f.Have, "\n"), "\n") {
					if l != "" {
						fmt.Fprintf(w, "-%s\n", l)
					}
				}
				for _, l := range strings.Split(strings.TrimSuffix(f.Want, "\n"), "\n") {
					fmt.Fprintf(w, "+%s\n", l)
				}
				continue
			}
			if c.Action != ActionCreate {
				fmt.Fprintf(w, "-%s=%s\n", f.Name, f.Have)
			}
			if c.Action != ActionDelete {
				fmt.Fprintf(w, "+%s=%s\n", f.Name, f.Want)
			}
		}
	}
	return nil
}

// WriteJSON prints the plan as JSON.
func WriteJSON(w io.Writer, p Plan) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}
