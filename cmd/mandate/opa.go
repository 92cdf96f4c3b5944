package main

import (
	opacmd "github.com/open-policy-agent/opa/cmd"
	"github.com/spf13/cobra"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/modelcheck"
)

// newOPACommand is OPA's own CLI with Mandate's builtins registered, so that
// `mandate opa test`, `check`, `fmt`, `eval` and `capabilities` know them:
// mandate.placement, and for policy tests mandate.model_problems.
func newOPACommand() *cobra.Command {
	evaluator.RegisterTestBuiltins()
	modelcheck.RegisterTestBuiltin()
	cmd := &cobra.Command{
		Use:   "opa",
		Short: "OPA's CLI with Mandate's builtins (mandate.placement, mandate.model_problems) registered",
	}
	cmd = opacmd.Command(cmd, "Mandate OPA")
	cmd.DisableFlagParsing = false
	return cmd
}
