package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/mandate-dev/mandate/buildinfo"
	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/cmd/mandate/app"
	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/decisionlog"
)

func newServeCommand() *cobra.Command {
	var configFile string
	cmd := &cobra.Command{
		Use:   "serve [--config FILE] [--kubeconfig FILE] [--cert-dir DIR] [--policies DIR]",
		Short: "Run the admission webhooks against a live cluster",
		Long: `Run the admission webhooks against a live cluster.

Configuration comes from flags, MANDATE_* environment variables and an optional
YAML file (--config), in that order of precedence; see docs/configuration.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadServeConfig(cmd.Flags(), configFile)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			return runServe(cmd.Context(), cmd.ErrOrStderr(), c)
		},
	}
	cmd.Flags().StringVar(&configFile, "config", "", "YAML configuration file (see docs/configuration.md)")
	config.AddFlags(cmd.Flags())
	return cmd
}

// loadServeConfig resolves the configuration: flags > MANDATE_* env >
// the --config file > defaults, decoded and validated by package config.
func loadServeConfig(f *pflag.FlagSet, file string) (config.Serve, error) {
	v := viper.New()
	if err := config.Bind(v); err != nil {
		return config.Serve{}, err
	}
	if err := config.BindFlags(v, f); err != nil {
		return config.Serve{}, err
	}
	if file != "" {
		if err := config.ReadFile(v, file); err != nil {
			return config.Serve{}, err
		}
	}
	c, err := config.Load(v)
	if err != nil {
		return config.Serve{}, fmt.Errorf("invalid configuration:\n%w", err)
	}
	return c, nil
}

// runServe runs serve until ctx ends or a signal stops it, logging (and
// writing decision lines) to logs: os.Stderr, but for tests.
func runServe(ctx context.Context, logs io.Writer, c config.Serve) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	handler := slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})
	log := logr.FromSlogHandler(leveled(handler, c.LogLevel))
	ctrl.SetLogger(log)
	stdLog(leveled(handler, c.LogLevel))
	ctx = ctrl.LoggerInto(ctx, log)
	log.Info("starting mandate serve", buildinfo.Get().KeysAndValues()...)
	if gogc, why := applyGCPercent(c.GCPercent, os.Getenv); why != "" {
		log.Info("garbage-collection target", "gcPercent", gogc, "reason", why)
	}
	// Queued: writing a line never holds an admission up; a denial's is
	// never dropped.
	decisions, err := decisionlog.New(handler, decisionlog.Options{
		Enabled: c.DecisionLog.Enabled, SampleRate: c.DecisionLog.SampleRate, IncludeObject: c.DecisionLog.IncludeObject,
		Queue: decisionlog.DefaultQueue})
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("decisionLog: %w", err)}
	}
	defer decisions.Close()

	rc, err := restConfig(c.Kubeconfig)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	srv, err := app.New(ctx, rc, c, decisions)
	if err != nil {
		return &exitError{code: 1, err: setupError(err)}
	}
	if err := srv.Start(ctx); err != nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}

// setupError names the configuration key of a bundle source that could
// not be read at startup.
func setupError(err error) error {
	var serr *bundles.StartupError
	switch {
	case errors.As(err, &serr) && serr.Shadow:
		return fmt.Errorf("bundle.shadow.source: %w", serr.Err)
	case errors.As(err, &serr):
		return fmt.Errorf("bundle.source: %w", serr.Err)
	}
	return fmt.Errorf("unable to set up the webhook server: %w", err)
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
		return nil, fmt.Errorf("kubeconfig: unable to load kubeconfig %q: %w", kubeconfig, err)
	}
	return cfg, nil
}
