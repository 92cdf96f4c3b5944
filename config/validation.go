package config

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mandate-dev/mandate/scheduler/facts"
)

// FieldError is a bad value of one key: Key names it, Msg says what was
// wrong and what is allowed.
type FieldError struct {
	Key string
	Msg string
}

func (e *FieldError) Error() string { return e.Key + ": " + e.Msg }

func fieldErr(key, format string, args ...any) error {
	return &FieldError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks every key and returns all problems, one FieldError each,
// joined; nil when the configuration is usable. It reads the TLS files of
// webhook.certDir so that missing certificates fail at startup.
func (s Serve) Validate() error {
	var errs []error
	if s.Webhook.Port < 1 || s.Webhook.Port > 65535 {
		errs = append(errs, fieldErr("webhook.port", "%d is not a port (1-65535)", s.Webhook.Port))
	}
	if strings.Contains(s.Webhook.Host, ":") && net.ParseIP(s.Webhook.Host) == nil {
		errs = append(errs, fieldErr("webhook.host", "%q is not a host name or IP address (set the port with webhook.port)", s.Webhook.Host))
	}
	if s.Webhook.MaxInFlightBytes < 1<<20 {
		errs = append(errs, fieldErr("webhook.maxInFlightBytes", "%d is too small (at least 1048576: the largest object the API server accepts must fit)", s.Webhook.MaxInFlightBytes))
	}
	if s.Webhook.CertDir != "" && s.Certs.Mode != CertsSelfSigned {
		errs = append(errs, validateCertDir(s.Webhook.CertDir)...)
	}
	errs = append(errs, validateClientAuth(s.Webhook)...)
	errs = append(errs, validateAddr("healthAddr", s.HealthAddr), validateAddr("metricsAddr", s.MetricsAddr),
		validateAddr("pprofAddr", s.PprofAddr))
	if s.GCPercent < MinGCPercent || s.GCPercent > MaxGCPercent {
		errs = append(errs, fieldErr("gcPercent", "%d is out of range (%d-%d)", s.GCPercent, MinGCPercent, MaxGCPercent))
	}
	if s.HealthAddr != "0" && s.HealthAddr == s.MetricsAddr {
		errs = append(errs, fieldErr("metricsAddr", "%q is also healthAddr (use distinct addresses, or \"0\" to disable one)", s.MetricsAddr))
	}
	if s.PprofAddr != "0" && (s.PprofAddr == s.HealthAddr || s.PprofAddr == s.MetricsAddr) {
		errs = append(errs, fieldErr("pprofAddr", "%q is also healthAddr or metricsAddr (use a distinct address)", s.PprofAddr))
	}
	switch s.LogLevel {
	case LogDebug, LogInfo, LogError:
	default:
		errs = append(errs, fieldErr("logLevel", "%q is not a level (debug, info or error)", s.LogLevel))
	}
	if s.Policies != "" {
		if fi, err := os.Stat(s.Policies); err != nil {
			errs = append(errs, fieldErr("policies", "%s not found: %v (a policy directory, or empty for the embedded default)", s.Policies, err))
		} else if !fi.IsDir() {
			errs = append(errs, fieldErr("policies", "%s is not a directory (a policy directory, or empty for the embedded default)", s.Policies))
		}
	}
	if len(s.AdminGroups) == 0 {
		errs = append(errs, fieldErr("adminGroups", "is empty (at least one group, e.g. system:masters)"))
	}
	for i, g := range s.AdminGroups {
		if strings.TrimSpace(g) == "" {
			errs = append(errs, fieldErr("adminGroups", "entry %d is empty (group names)", i))
		}
	}
	for i, u := range s.SchedulerIdentities {
		if strings.TrimSpace(u) == "" {
			errs = append(errs, fieldErr("schedulerIdentities", "entry %d is empty (user names, e.g. system:kube-scheduler)", i))
		} else if strings.ContainsAny(u, `'\`) {
			errs = append(errs, fieldErr("schedulerIdentities", "entry %d %q holds a quote or backslash (user names, written into the webhook's CEL matchConditions)", i, u))
		}
	}
	if s.Namespace != "" {
		if msgs := validation.IsDNS1123Label(s.Namespace); len(msgs) > 0 {
			errs = append(errs, fieldErr("namespace", "%q is not a namespace name: %s", s.Namespace, strings.Join(msgs, "; ")))
		}
	}
	if t := s.Evaluation.Timeout; t < 1e6 || t > MaxEvaluationTimeout {
		errs = append(errs, fieldErr("evaluation.timeout", "%s is out of range (1ms-%s)", t, MaxEvaluationTimeout))
	}
	switch s.Evaluation.EnforcementOverride {
	case "", EnforcementDryRun, EnforcementWarn:
	default:
		errs = append(errs, fieldErr("evaluation.enforcementOverride", "%q is not an override (\"\", %q or %q)",
			s.Evaluation.EnforcementOverride, EnforcementDryRun, EnforcementWarn))
	}
	if l := s.Quota.Grants.Lease; l < 3*time.Second || l > 10*time.Minute {
		errs = append(errs, fieldErr("quota.grants.lease", "%s is out of range (3s-10m)", l))
	}
	if b := s.Quota.Grants.StoreBound; b < time.Second || b > 10*time.Minute {
		errs = append(errs, fieldErr("quota.grants.storeBound", "%s is out of range (1s-10m)", b))
	}
	if strings.ContainsAny(s.Quota.Grants.Holder, " \t\n") {
		errs = append(errs, fieldErr("quota.grants.holder", "%q has a space", s.Quota.Grants.Holder))
	}
	if w := s.Quota.ConfirmationWindow; w < MinConfirmationWindow || w > MaxConfirmationWindow {
		errs = append(errs, fieldErr("quota.confirmationWindow", "%s is out of range (%s-%s)", w, MinConfirmationWindow, MaxConfirmationWindow))
	}
	if q := s.KubeClient.QPS; q < 1 || q > MaxKubeClientQPS {
		errs = append(errs, fieldErr("kubeClient.qps", "%d is out of range (1-%d)", q, MaxKubeClientQPS))
	}
	if b := s.KubeClient.Burst; b < s.KubeClient.QPS || b > MaxKubeClientQPS {
		errs = append(errs, fieldErr("kubeClient.burst", "%d is out of range (kubeClient.qps %d-%d)", b, s.KubeClient.QPS, MaxKubeClientQPS))
	}
	errs = append(errs, s.Bundle.validate(s.Policies)...)
	if r := s.DecisionLog.SampleRate; !(r >= 0 && r <= 1) {
		errs = append(errs, fieldErr("decisionLog.sampleRate", "%v is out of range (0-1: the fraction of clean allowed decisions logged)", r))
	}
	errs = append(errs, s.Sync.validate()...)
	errs = append(errs, s.OpenReports.validate()...)
	errs = append(errs, s.Certs.validate(s.Namespace, s.Webhook.CertDir)...)
	return errors.Join(errs...)
}

// validate checks the bundle source settings; policies is the other policy
// source, which a bundle excludes.
func (b Bundle) validate(policies string) []error {
	var errs []error
	if b.RequireSignature && b.VerificationKey == "" {
		errs = append(errs, fieldErr("bundle.requireSignature", "is true but bundle.verificationKey is not set (a PEM public key file to verify signatures with)"))
	}
	if b.VerificationKeyID != "" && b.VerificationKey == "" {
		errs = append(errs, fieldErr("bundle.verificationKeyId", "is set but bundle.verificationKey is not (the PEM public key the id names)"))
	}
	if b.Scope != "" && b.VerificationKey == "" {
		errs = append(errs, fieldErr("bundle.scope", "is set but bundle.verificationKey is not (signatures carry the scope)"))
	}
	if b.Shadow.Source != "" {
		errs = append(errs, validateSource("bundle.shadow.source", b.Shadow.Source)...)
	}
	if b.Source == "" {
		if (b.VerificationKey != "" && b.Shadow.Source == "") || b.PersistDir != "" {
			errs = append(errs, fieldErr("bundle.source", "is empty but other bundle.* keys are set (a bundle file or directory, or an http(s) URL)"))
		}
		if b.Shadow.Source == "" {
			return append(errs, b.validateHTTP()...)
		}
	} else {
		if policies != "" {
			errs = append(errs, fieldErr("bundle.source", "and policies are both set: take the policy from one of them"))
		}
		errs = append(errs, validateSource("bundle.source", b.Source)...)
	}
	if b.VerificationKey != "" {
		if _, err := os.Stat(b.VerificationKey); err != nil {
			errs = append(errs, fieldErr("bundle.verificationKey", "%v (a PEM public key file)", err))
		}
	}
	if b.PersistDir != "" {
		if fi, err := os.Stat(b.PersistDir); err != nil || !fi.IsDir() {
			errs = append(errs, fieldErr("bundle.persistDir", "%q is not a directory (a writable directory)", b.PersistDir))
		}
	}
	if b.Interval < time.Second || b.Interval > time.Hour {
		errs = append(errs, fieldErr("bundle.interval", "%s is out of range (1s-1h)", b.Interval))
	}
	return append(errs, b.validateHTTP()...)
}

// validateHTTP checks the settings of an http(s) source: readable files,
// and at least one source (active or shadow) they apply to.
func (b Bundle) validateHTTP() []error {
	var errs []error
	isURL := func(s string) bool {
		return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "s3://") || strings.HasPrefix(s, "oci://")
	}
	for _, f := range []struct{ key, path, want string }{
		{"bundle.bearerTokenFile", b.BearerTokenFile, "a readable file holding a bearer token"},
		{"bundle.caFile", b.CAFile, "a readable PEM CA certificate file"},
		{"bundle.serviceConfig", b.ServiceConfig, "a readable YAML or JSON file holding one OPA service"},
	} {
		if f.path == "" {
			continue
		}
		if !isURL(b.Source) && !isURL(b.Shadow.Source) {
			errs = append(errs, fieldErr(f.key, "is set but neither bundle.source nor bundle.shadow.source is an http(s) URL (or s3:// or oci://)"))
			continue
		}
		if _, err := os.ReadFile(f.path); err != nil {
			errs = append(errs, fieldErr(f.key, "%v (%s)", err, f.want))
		}
	}
	return errs
}

// validateSource checks a bundle source: an http(s) URL with a host,
// s3://bucket/key, or anything else taken as a path (read at startup, so a
// missing one fails there with the key named).
func validateSource(key, source string) []error {
	if u, err := url.Parse(source); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		if u.Host == "" {
			// The value is not repeated: a URL may carry credentials.
			return []error{fieldErr(key, "the URL has no host (a bundle file or directory, an http(s) URL or s3://bucket/key)")}
		}
	} else if err == nil && u.Scheme == "s3" {
		if u.Host == "" || strings.Trim(u.Path, "/") == "" || u.RawQuery != "" {
			return []error{fieldErr(key, "an S3 bundle is s3://bucket/key")}
		}
	} else if err == nil && u.Scheme == "oci" {
		if u.Host == "" || strings.Trim(u.Path, "/") == "" || u.RawQuery != "" || u.User != nil {
			return []error{fieldErr(key, "an OCI bundle is oci://registry/repository:tag")}
		}
	} else if strings.Contains(source, "://") {
		scheme, _, _ := strings.Cut(source, "://")
		return []error{fieldErr(key, "%s:// URLs are not supported: only http, https, s3 and oci (or a bundle file or directory)", scheme)}
	}
	return nil
}

// validateCertDir checks that dir holds readable tls.crt and tls.key.
func validateCertDir(dir string) []error {
	fi, err := os.Stat(dir)
	if err != nil {
		return []error{fieldErr("webhook.certDir", "%s not found: %v (a directory holding tls.crt and tls.key)", dir, err)}
	}
	if !fi.IsDir() {
		return []error{fieldErr("webhook.certDir", "%s is not a directory (a directory holding tls.crt and tls.key)", dir)}
	}
	var errs []error
	for _, name := range []string{"tls.crt", "tls.key"} {
		path := filepath.Join(dir, name)
		f, err := os.Open(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			errs = append(errs, fieldErr("webhook.certDir", "%s not found: %v (a directory holding tls.crt and tls.key)", path, err))
		case err != nil:
			errs = append(errs, fieldErr("webhook.certDir", "%s is not readable: %v", path, err))
		default:
			f.Close()
		}
	}
	return errs
}

// validateAddr accepts "0" (disabled) or host:port with a port 0-65535.
func validateAddr(key, addr string) error {
	if addr == "0" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fieldErr(key, "%q is not an address: %v (host:port such as :8080, or \"0\" to disable)", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fieldErr(key, "%q has no valid port (host:port with a port 0-65535, or \"0\" to disable)", addr)
	}
	return nil
}

// validate checks the background audit's settings.
func (o OpenReports) validate() []error {
	var errs []error
	if o.Interval < MinOpenReportsInterval || o.Interval > MaxOpenReportsInterval {
		errs = append(errs, fieldErr("openReports.interval", "%s is out of range (%s-%s)", o.Interval, MinOpenReportsInterval, MaxOpenReportsInterval))
	}
	if o.MaxResults < 1 || o.MaxResults > MaxOpenReportsMaxResults {
		errs = append(errs, fieldErr("openReports.maxResults", "%d is out of range (1-%d)", o.MaxResults, MaxOpenReportsMaxResults))
	}
	return errs
}

// validate checks the scheduler sync settings.
func (y Sync) validate() []error {
	var errs []error
	if y.Interval < 10*time.Second || y.Interval > 24*time.Hour {
		errs = append(errs, fieldErr("sync.interval", "%s is out of range (10s-24h)", y.Interval))
	}
	if y.Mode != SyncApply && y.Mode != SyncReport {
		errs = append(errs, fieldErr("sync.mode", "%q is not a mode (\"apply\" or \"report\")", y.Mode))
	}
	known := facts.SyncNames()
	for _, s := range y.Schedulers {
		if !slices.Contains(known, s) {
			errs = append(errs, fieldErr("sync.schedulers", "%q is not a scheduler sync configures (%s)", s, strings.Join(known, ", ")))
		}
	}
	return errs
}

// validateClientAuth checks that webhook.clientCAFile, when set, is a
// readable PEM file holding at least one certificate, and that
// webhook.clientCN is set only with it: a common name alone would check
// nothing.
func validateClientAuth(w Webhook) []error {
	if w.ClientCAFile == "" {
		if w.ClientCN != "" {
			return []error{fieldErr("webhook.clientCN", "%q needs webhook.clientCAFile (the CAs that sign the caller's certificate)", w.ClientCN)}
		}
		return nil
	}
	pem, err := os.ReadFile(w.ClientCAFile)
	if err != nil {
		return []error{fieldErr("webhook.clientCAFile", "unable to read %s: %v (a PEM file of the CAs that sign the API server's client certificate)", w.ClientCAFile, err)}
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return []error{fieldErr("webhook.clientCAFile", "%s holds no PEM certificate", w.ClientCAFile)}
	}
	return nil
}
