package cli

import (
	"fmt"

	opacmd "github.com/open-policy-agent/opa/cmd"
	opaversion "github.com/open-policy-agent/opa/v1/version"
	"github.com/spf13/cobra"

	"github.com/mandate-dev/mandate/buildinfo"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/modelcheck"
)

// newOPACommand is OPA's own CLI with Mandate's builtins registered, so that
// `mandate opa test`, `check`, `fmt`, `eval` and `capabilities` know them:
// mandate.placement, and for policy tests mandate.model_problems. Its
// version command prints Mandate's build first, and OPA's "Build Commit"
// is Mandate's: the OPA inside is built from Mandate's commit.
func newOPACommand() *cobra.Command {
	evaluator.RegisterTestBuiltins()
	modelcheck.RegisterTestBuiltin()
	info := buildinfo.Get()
	opaversion.Vcs, opaversion.Timestamp = info.Commit, info.BuildDate
	cmd := &cobra.Command{
		Use:   "opa",
		Short: "OPA's CLI with Mandate's builtins (mandate.placement, mandate.model_problems) registered",
	}
	cmd = opacmd.Command(cmd, "Mandate OPA")
	cmd.DisableFlagParsing = false
	for _, sub := range cmd.Commands() {
		if sub.Name() != "version" || sub.RunE == nil {
			continue
		}
		opaRun := sub.RunE
		sub.RunE = func(c *cobra.Command, args []string) error {
			if err := writeVersion(c.OutOrStdout(), info); err != nil {
				return err
			}
			fmt.Fprintln(c.OutOrStdout())
			return opaRun(c, args)
		}
	}
	return cmd
}
