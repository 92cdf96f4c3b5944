// Package cli is the command tree of Mandate's binaries: mandate's (the
// admission webhook server, serve, assembled by package app; offline
// decisions, eval; audits of existing workloads, audit; policy bundles,
// bundle; checks of the authority model, model; offline simulation,
// simulate; OPA's CLI with Mandate's builtins, opa; …) and the kubectl
// plugin's, kubectl-mandate (explain, report and simulate: the same
// commands). It only wires configuration, logging and subcommands; the
// logic lives in the top-level packages.
package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	opacmd "github.com/open-policy-agent/opa/cmd"
	"github.com/spf13/cobra"
	// Mozilla's root certificates, used only where the system has none:
	// the image (make image) is the binary alone, and https bundle
	// sources must still verify.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/mandate-dev/mandate/buildinfo"
)

// pluginName says whether the binary was invoked as the kubectl plugin
// kubectl-mandate (a link or copy of the binary on PATH).
func pluginName(argv0 string) bool {
	base := filepath.Base(argv0)
	return strings.TrimSuffix(base, ".exe") == "kubectl-mandate"
}

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

// Mandate runs mandate's command line (os.Args) and returns the process
// exit code.
func Mandate() int {
	root := newRootCommand()
	if pluginName(os.Args[0]) {
		// Run as the kubectl plugin (kubectl mandate …): the same commands,
		// and usage lines that say how they were called.
		asPlugin(root)
	}
	return execute(root)
}

// KubectlPlugin runs the kubectl plugin's command line (os.Args): kubectl
// mandate explain|report|simulate|version, and returns the process exit
// code.
func KubectlPlugin() int { return execute(newPluginCommand()) }

func execute(root *cobra.Command) int {
	if err := root.Execute(); err != nil {
		return exitCode(err)
	}
	return 0
}

// asPlugin makes root's usage lines say kubectl mandate.
func asPlugin(root *cobra.Command) {
	root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl mandate"}
}

// newPluginCommand is the kubectl plugin's command tree: mandate's
// explain, report and simulate, and version, with mandate's exit codes.
func newPluginCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "kubectl-mandate",
		Short:         "Mandate's view of a GPU cluster: why a workload waits, idle GPUs beside blocked work, what-if simulation",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	asPlugin(root)
	root.AddCommand(newExplainCommand(), newReportCommand(), newSimulateCommand(), newVersionCommand())
	setVersion(root)
	root.InitDefaultCompletionCmd()
	usageErrorsExit2(root)
	return root
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "mandate",
		Short:         "Admission-policy engine for GPU/AI Kubernetes clusters",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newEvalCommand(), newOPACommand(), newServeCommand(), newBundleCommand())
	root.AddCommand(newAuditCommand(), newWebhookConfigurationsCommand(), newVersionCommand(), newUninstallCommand(), newModelCommand(), newSyncCommand(), newExplainCommand(), newReportCommand(), newSimulateCommand())
	setVersion(root)
	// Added now rather than when it runs, so its usage errors exit 2 too.
	root.InitDefaultCompletionCmd()
	usageErrorsExit2(root)
	return root
}

// setVersion makes --version print what mandate version prints.
func setVersion(root *cobra.Command) {
	root.Version = buildinfo.Get().Version
	var version strings.Builder
	_ = writeVersion(&version, buildinfo.Get())
	root.SetVersionTemplate(strings.ReplaceAll(version.String(), "{{", `{{"{{"}}`))
}

// usageError is a command line Mandate cannot act on: exit 2, whereas 1
// means denied or failed.
func usageError(err error) error { return &exitError{code: exitBadInput, err: err} }

// usageErrorsExit2 makes every usage error in root's tree exit 2: an
// unknown flag or a flag's bad value, a wrong number of arguments, and a
// required flag not given. Cobra returns all of them as plain errors; its
// flag error hook, each command's argument validator and a check of the
// required flags before each command's own PreRun wrap them.
func usageErrorsExit2(root *cobra.Command) {
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.Runnable() && c.HasSubCommands() {
			// A group: an unknown subcommand is a usage error, none prints
			// the help (cobra would exit 0 with help, or 1).
			c.Args = func(c *cobra.Command, a []string) error {
				if len(a) > 0 {
					return usageError(fmt.Errorf("unknown command %q for %q", a[0], c.CommandPath()))
				}
				return nil
			}
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
			return
		}
		if c.Args != nil {
			args := c.Args
			c.Args = func(c *cobra.Command, a []string) error {
				if err := args(c, a); err != nil {
					return usageError(err)
				}
				return nil
			}
		}
		if !c.Runnable() {
			return
		}
		preE, pre := c.PreRunE, c.PreRun
		c.PreRun = nil
		c.PreRunE = func(c *cobra.Command, a []string) error {
			if err := c.ValidateRequiredFlags(); err != nil {
				return usageError(err)
			}
			if err := c.ValidateFlagGroups(); err != nil {
				return usageError(err)
			}
			switch {
			case preE != nil:
				return preE(c, a)
			case pre != nil:
				pre(c, a)
			}
			return nil
		}
	}
	walk(root)
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
