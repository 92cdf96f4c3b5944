package main

import (
	"context"
	"errors"
	"fmt"
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

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/cmd/mandate/app"
	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/decisionlog"
)

// serveFlags maps each flag of `mandate serve` to its configuration key.
var serveFlags = map[string]string{
	"kubeconfig":              "kubeconfig",
	"cert-dir":                "webhook.certDir",
	"host":                    "webhook.host",
	"port":                    "webhook.port",
	"health-addr":             "healthAddr",
	"metrics-addr":            "metricsAddr",
	"policies":                "policies",
	"admin-groups":            "adminGroups",
	"namespace":               "namespace",
	"evaluation-timeout":      "evaluation.timeout",
	"bundle":                  "bundle.source",
	"bundle-verification-key": "bundle.verificationKey",
	"bundle-persist-dir":      "bundle.persistDir",
	"bundle-interval":         "bundle.interval",

	"bundle-require-signature": "bundle.requireSignature",
	"shadow-bundle":            "bundle.shadow.source",
	"bundle-bearer-token-file": "bundle.bearerTokenFile",
	"bundle-ca-file":           "bundle.caFile",

	// The serving certificate (docs/certificates.md).
	"certs-mode":                  "certs.mode",
	"certs-secret-name":           "certs.secretName",
	"certs-service-name":          "certs.serviceName",
	"certs-webhook-configuration": "certs.webhookConfiguration",
}

// The decision log's flags (docs/observability.md).
func init() {
	serveFlags["decision-log"] = "decisionLog.enabled"
	serveFlags["decision-log-sample-rate"] = "decisionLog.sampleRate"
	serveFlags["decision-log-include-object"] = "decisionLog.includeObject"
}

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
			return runServe(cmd.Context(), c)
		},
	}
	d := config.Default()
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "YAML configuration file (see docs/configuration.md)")
	f.String("kubeconfig", d.Kubeconfig, "kubeconfig file (default: in-cluster, or $KUBECONFIG, or ~/.kube/config)")
	f.String("cert-dir", d.Webhook.CertDir, "directory holding tls.crt and tls.key, reloaded when they change (default: controller-runtime's temp dir)")
	f.String("host", d.Webhook.Host, "address the webhook server listens on (default: all)")
	f.Int("port", d.Webhook.Port, "port the webhook server listens on")
	f.String("health-addr", d.HealthAddr, "address of /healthz and /readyz (\"0\" disables)")
	f.String("metrics-addr", d.MetricsAddr, "address of /metrics (\"0\" disables)")
	f.String("policies", d.Policies, "policy directory (default: the embedded default authority model)")
	f.StringSlice("admin-groups", d.AdminGroups, "groups that may set, change or remove a namespace's mandate.dev/tenant label")
	f.String("namespace", d.Namespace, "Mandate's own namespace, never governed (default: $POD_NAMESPACE)")
	f.Duration("evaluation-timeout", d.Evaluation.Timeout, "deadline of one policy evaluation")
	f.String("bundle", d.Bundle.Source, "policy bundle file, directory or http(s) URL, polled and hot-swapped (instead of --policies); serve exits at once when it cannot be read and nothing is persisted")
	f.String("bundle-verification-key", d.Bundle.VerificationKey, "PEM public key; when set, only bundles signed with it are activated")
	f.String("bundle-persist-dir", d.Bundle.PersistDir, "directory keeping the last good bundle for restarts without the source")
	f.Duration("bundle-interval", d.Bundle.Interval, "how often the bundle source is polled")
	f.Bool("decision-log", d.DecisionLog.Enabled, "write one JSON decision line per decision to stderr (\"logger\":\"decision\")")
	f.Float64("decision-log-sample-rate", d.DecisionLog.SampleRate, "fraction (0-1) of clean allowed decisions logged; denials, errors, warned or dry-run violations and shadow differences always are")
	f.Bool("decision-log-include-object", d.DecisionLog.IncludeObject, "add the submitted object to decision lines, with env values, args, commands and annotation values redacted")
	f.Bool("bundle-require-signature", d.Bundle.RequireSignature, "refuse every unsigned bundle (needs --bundle-verification-key)")
	f.String("shadow-bundle", d.Bundle.Shadow.Source, "candidate bundle file, directory or http(s) URL decided beside the active policy and never enforced; differences are counted and logged")
	f.String("bundle-bearer-token-file", d.Bundle.BearerTokenFile, "file holding a bearer token sent to an http(s) bundle source and shadow, re-read on every poll")
	f.String("bundle-ca-file", d.Bundle.CAFile, "PEM CA certificates that verify an https bundle source's and shadow's server (default: the system roots)")
	f.String("certs-mode", d.Certs.Mode, "serving certificate: \"files\" (tls.crt and tls.key of --cert-dir, e.g. from cert-manager) or \"selfSigned\" (Mandate's own rotating CA; see docs/certificates.md)")
	f.String("certs-secret-name", d.Certs.SecretName, "selfSigned: the CA Secret in Mandate's namespace")
	f.String("certs-service-name", d.Certs.ServiceName, "selfSigned: Mandate's Service, whose DNS names the serving certificate is for")
	f.String("certs-webhook-configuration", d.Certs.WebhookConfiguration, "selfSigned: name of the mutating and validating webhook configurations whose caBundle is kept")
	return cmd
}

// loadServeConfig resolves the configuration: flags > MANDATE_* env >
// the --config file > defaults, decoded and validated by package config.
func loadServeConfig(f *pflag.FlagSet, file string) (config.Serve, error) {
	v := viper.New()
	if err := config.Bind(v); err != nil {
		return config.Serve{}, err
	}
	for flag, key := range serveFlags {
		if err := v.BindPFlag(key, f.Lookup(flag)); err != nil {
			return config.Serve{}, fmt.Errorf("unable to bind --%s: %w", flag, err)
		}
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

func runServe(ctx context.Context, c config.Serve) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	handler := slog.NewJSONHandler(os.Stderr, nil)
	log := logr.FromSlogHandler(handler)
	ctrl.SetLogger(log)
	ctx = ctrl.LoggerInto(ctx, log)
	decisions, err := decisionlog.New(handler, c.DecisionLog.Options())
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("decisionLog: %w", err)}
	}

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
