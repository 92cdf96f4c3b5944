package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/mandate-dev/mandate/gang"
	"github.com/mandate-dev/mandate/webhook"
)

type serveOptions struct {
	kubeconfig string
	policies   string
	webhook    webhook.Options
}

func newServeCommand() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve [--kubeconfig FILE] [--cert-dir DIR] [--policies DIR]",
		Short: "Run the admission webhooks against a live cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster, or $KUBECONFIG, or ~/.kube/config)")
	f.StringVar(&o.webhook.CertDir, "cert-dir", "", "directory holding tls.crt and tls.key, reloaded when they change (default: controller-runtime's temp dir)")
	f.StringVar(&o.webhook.Host, "host", "", "address the webhook server listens on (default: all)")
	f.IntVar(&o.webhook.Port, "port", webhook.DefaultPort, "port the webhook server listens on")
	f.StringVar(&o.webhook.HealthAddr, "health-addr", webhook.DefaultHealthAddr, "address of /healthz and /readyz (\"0\" disables)")
	f.StringVar(&o.webhook.MetricsAddr, "metrics-addr", webhook.DefaultMetricsAddr, "address of /metrics (\"0\" disables)")
	f.StringVar(&o.policies, "policies", "", "policy directory (default: the embedded default authority model)")
	f.StringSliceVar(&o.webhook.AdminGroups, "admin-groups", webhook.DefaultAdminGroups, "groups that may set, change or remove a namespace's mandate.dev/tenant label")
	f.StringVar(&o.webhook.Namespace, "namespace", os.Getenv("POD_NAMESPACE"), "Mandate's own namespace, never governed (default: $POD_NAMESPACE)")
	return cmd
}

func runServe(ctx context.Context, o serveOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := logr.FromSlogHandler(slog.NewJSONHandler(os.Stderr, nil))
	ctrl.SetLogger(log)
	ctx = ctrl.LoggerInto(ctx, log)

	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	o.webhook.RestConfig = cfg
	if o.webhook.Policy, err = loadPolicy(o.policies); err != nil {
		return &exitError{code: 1, err: err}
	}
	o.webhook.Setup = []func(manager.Manager) error{gang.Setup}
	srv, err := webhook.New(ctx, o.webhook)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("unable to set up the webhook server: %w", err)}
	}
	if err := srv.Start(ctx); err != nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("unable to find the API server: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("unable to load kubeconfig %q: %w", kubeconfig, err)
	}
	return cfg, nil
}
