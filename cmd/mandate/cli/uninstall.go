package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/webhook"
)

func newUninstallCommand() *cobra.Command {
	var kubeconfig, name string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "uninstall --webhook-configuration NAME [--kubeconfig FILE]",
		Short: "Delete Mandate's mutating and validating webhook configurations (the chart's pre-delete hook)",
		Long: `Delete the MutatingWebhookConfiguration and ValidatingWebhookConfiguration
called NAME, so that the API server stops calling a Mandate that is being
removed: with failurePolicy Fail, configurations left behind would refuse every
governed create. The Helm chart runs it as its pre-delete hook, with a
ServiceAccount allowed to delete those two objects and nothing else.
Idempotent: a configuration that does not exist counts as deleted. Uses the
in-cluster configuration, $KUBECONFIG or ~/.kube/config unless --kubeconfig.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return &exitError{code: 2, err: fmt.Errorf("--webhook-configuration is required: the name of both configurations")}
			}
			log := logr.FromSlogHandler(slog.NewJSONHandler(os.Stderr, nil))
			ctrl.SetLogger(log)
			ctx, cancel := context.WithTimeout(ctrl.LoggerInto(cmd.Context(), log), timeout)
			defer cancel()
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			c, err := client.New(cfg, client.Options{})
			if err != nil {
				return fmt.Errorf("unable to create a client: %w", err)
			}
			deleted, err := webhook.DeleteConfigurations(ctx, c, name)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "webhook configurations %s: %d deleted, none left\n", name, len(deleted))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster, or $KUBECONFIG, or ~/.kube/config)")
	f.StringVar(&name, "webhook-configuration", config.WebhookConfigurationName, "name of the mutating and validating webhook configurations")
	f.DurationVar(&timeout, "timeout", time.Minute, "give up after this long")
	return cmd
}
