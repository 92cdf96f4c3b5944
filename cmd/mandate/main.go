// Command mandate is Mandate's one binary: the admission webhook server
// (serve, assembled by package app), offline decisions (eval), audits of
// existing workloads (audit), policy bundles (bundle) and OPA's CLI with
// Mandate's builtins (opa). It only wires configuration, logging and
// subcommands; the logic lives in the top-level packages.
package main

import (
	"errors"
	"fmt"
	"os"

	opacmd "github.com/open-policy-agent/opa/cmd"
	"github.com/spf13/cobra"
)

// exitError carries a process exit code out of a subcommand.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func main() {
	if err := newRootCommand().Execute(); err != nil {
		os.Exit(exitCode(err))
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "mandate",
		Short:         "Admission-policy engine for GPU/AI Kubernetes clusters",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newEvalCommand(), newOPACommand(), newServeCommand(), newBundleCommand())
	root.AddCommand(newAuditCommand(), newWebhookConfigurationsCommand(), newSyncCommand())
	return root
}

// exitCode prints err unless it is OPA's bare exit status, and returns the
// process exit code it carries (1 by default).
func exitCode(err error) int {
	var opaExit *opacmd.ExitError
	if errors.As(err, &opaExit) {
		if inner := errors.Unwrap(opaExit); inner != nil {
			fmt.Fprintln(os.Stderr, "mandate opa:", inner)
		}
		return opaExit.Exit
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "mandate:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "mandate:", err)
	return 1
}
