package cli

import "github.com/spf13/cobra"

// newSimulateCommand is the group of the simulator's commands.
func newSimulateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Simulate placement and demand offline",
		Long: `Simulate what placement and demand do to a cluster, offline.

  run   a demand trace replayed over simulated time through the authority model
  fgd   the FGD paper's fidelity protocol: GPU allocation as tasks arrive on an
        empty cluster, per placement policy, over seeds`,
	}
	cmd.AddCommand(newSimulateFGDCommand())
	cmd.AddCommand(newSimulateRunCommand())
	return cmd
}
