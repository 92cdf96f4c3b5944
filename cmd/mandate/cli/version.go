package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mandate-dev/mandate/buildinfo"
)

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version [-o table|json|yaml]",
		Short: "Print Mandate's version, Git commit, build date, and the Go and OPA versions inside it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output == outputTable {
				return writeVersion(cmd.OutOrStdout(), buildinfo.Get())
			}
			return writeStructured(cmd.OutOrStdout(), output, buildinfo.Get())
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

// writeVersion is the table form of `mandate version`, which
// `mandate --version` and `mandate opa version` print too.
func writeVersion(out io.Writer, i buildinfo.Info) error {
	tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', 0)
	for _, row := range [][2]string{{"Version", i.Version}, {"Commit", i.Commit}, {"Build date", i.BuildDate},
		{"Go version", i.GoVersion}, {"OPA version", i.OPAVersion}, {"Platform", i.Platform}} {
		fmt.Fprintf(tw, "%s:\t%s\n", row[0], row[1])
	}
	return tw.Flush()
}
