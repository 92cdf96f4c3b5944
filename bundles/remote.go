package bundles

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/download"
	"github.com/open-policy-agent/opa/v1/logging"
	"github.com/open-policy-agent/opa/v1/plugins"
	"github.com/open-policy-agent/opa/v1/plugins/rest"
	"github.com/open-policy-agent/opa/v1/util"
)

// urlSchemes are the URL schemes a bundle source may name.
var urlSchemes = []string{"http://", "https://", "s3://", "oci://"}

// IsURL reports whether a bundle source is a URL (http, https, s3 or oci)
// rather than a file or directory path.
func IsURL(ref string) bool {
	for _, scheme := range urlSchemes {
		if strings.HasPrefix(ref, scheme) {
			return true
		}
	}
	return false
}

// HTTPSource polls a bundle served over HTTP(S), kept in an S3 bucket or
// pushed to an OCI registry, through OPA's own bundle downloaders (package
// download) and REST client (package plugins/rest): If-None-Match with the
// last ETag, so a 304 is no change and a 200 a new bundle to activate (for
// OCI, the digest of the bundle layer), and OPA's credential plugins
// (bearer, client TLS, OAuth2 client credentials, S3 SigV4, GCP metadata,
// Azure managed identity) configured by Service. Mandate polls, backs off
// after failures (up to MaxBackoff) and activates through its Activator
// (verify → compile → state → smoke → swap) as for any other source; the
// downloader only fetches.
type HTTPSource struct {
	// URL is an http(s):// URL, s3://bucket/key or
	// oci://registry/repository:tag.
	URL string
	// Interval between polls; DefaultPollInterval when zero.
	Interval time.Duration
	// MaxBackoff caps the delay after failures; DefaultMaxBackoff when zero.
	MaxBackoff time.Duration
	// Timeout bounds one download; DefaultHTTPTimeout when zero.
	Timeout time.Duration
	// BearerToken, or the file holding it (re-read on every poll), is sent
	// as Authorization: Bearer; the service's bearer credentials.
	BearerToken     string
	BearerTokenFile string
	// CAFile holds the PEM certificates that sign the bundle server's;
	// the system roots when empty. The service's tls.ca_cert.
	CAFile string
	// Service is one service of OPA's configuration (YAML or JSON), whose
	// credentials, tls, headers and response_header_timeout_seconds are
	// the client's. Its url is the endpoint of an s3:// source (path
	// style: url/bucket/key; the bucket's AWS endpoint when unset) or an
	// oci:// one (https://registry when unset); an http(s) URL names its
	// server itself. An s3:// source without credentials signs with the
	// AWS_* environment variables.
	Service   []byte
	Activator *Activator

	dl trigger
	// oci is the OCI downloader, stopped (its local store removed) by Close.
	oci *download.OCIDownloader
	// shown is URL redacted; secrets are never shown.
	shown   string
	secrets []string
	// pollCtx is the context of the poll in progress, for activation;
	// called is signalled when the downloader's callback returns.
	pollCtx context.Context
	called  chan struct{}
	// activated is the SHA-256 of the last bundle this source activated.
	activated string
}

// init builds the downloader once; every error is one of configuration.
func (s *HTTPSource) init() error {
	if s.dl != nil {
		return nil
	}
	s.shown = RedactURL(s.URL)
	s.secrets = urlSecrets(s.URL)
	if s.BearerToken != "" {
		s.secrets = append(s.secrets, s.BearerToken)
	}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return fmt.Errorf("unable to read the bundle server's CA: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return fmt.Errorf("bundle server CA %q holds no PEM certificate", s.CAFile)
		}
	}
	cfg, path, err := serviceConfig(s.URL, s.Service, s.BearerToken, s.BearerTokenFile, s.CAFile)
	if err != nil {
		return fmt.Errorf("bundle source %s: %w", s.shown, err)
	}
	client, err := rest.New(cfg, nil, rest.Name("mandate-bundle"), rest.Logger(logging.NewNoOpLogger()))
	if err != nil {
		return fmt.Errorf("bundle source %s: unable to read the service configuration: %w", s.shown, err)
	}
	// Built here once, so a bad credential or TLS setting fails at
	// startup, not at the first poll.
	plugin, err := client.Config().AuthPlugin(nil)
	if err != nil {
		return fmt.Errorf("bundle source %s: service credentials: %w", s.shown, err)
	}
	if _, err := plugin.NewClient(*client.Config()); err != nil {
		return fmt.Errorf("bundle source %s: service client: %w", s.shown, s.redact(err))
	}
	mode := plugins.TriggerManual
	dc := download.Config{Trigger: &mode}
	if err := dc.ValidateAndInjectDefaults(); err != nil {
		return fmt.Errorf("bundle source %s: %w", s.shown, err)
	}
	var vc *bundle.VerificationConfig
	if a := s.Activator; a != nil && a.opts.Verify != nil {
		// OPA's reader refuses a signed bundle it cannot verify (so it needs
		// the key); an unsigned one, or one naming another key id, it hands
		// over for Mandate to reject with its own error, remembering the
		// ETag. Mandate verifies every archive again before activating.
		if vc, err = a.opts.Verify.verificationConfig(); err != nil {
			return err
		}
		vc = vc.WithOptionalSignature()
	}
	// The raw archive is what Mandate verifies, activates and persists.
	parser := ast.ParserOptions{RegoVersion: ast.RegoV1}
	if strings.HasPrefix(s.URL, "oci://") {
		store, err := os.MkdirTemp("", "mandate-oci-")
		if err != nil {
			return fmt.Errorf("bundle source %s: %w", s.shown, err)
		}
		d := download.NewOCI(dc, client, path, store).WithCallback(s.update).WithBundlePersistence(true).
			WithSizeLimitBytes(MaxBundleBytes).WithBundleParserOpts(parser)
		if vc != nil {
			d = d.WithBundleVerificationConfig(vc)
		}
		s.dl, s.oci = d, d
		return nil
	}
	d := download.New(dc, client, path).WithCallback(s.update).WithBundlePersistence(true).
		WithSizeLimitBytes(MaxBundleBytes).WithBundleParserOpts(parser)
	if vc != nil {
		d = d.WithBundleVerificationConfig(vc)
	}
	s.dl = d
	return nil
}

// trigger is what Mandate needs of OPA's HTTP and OCI downloaders: one
// download, in manual trigger mode.
type trigger interface {
	Trigger(ctx context.Context) error
}

// Close releases what the source holds: the local store of an OCI source.
// Run closes the source when it returns.
func (s *HTTPSource) Close() {
	if s.oci != nil {
		s.oci.Stop(context.Background())
	}
}

// Poll fetches the bundle unless unchanged (304) and activates it. The
// ETag of a fetched bundle is remembered whether or not it activates, so a
// rejected bundle is not downloaded again until the server's changes; one
// that OPA's reader refuses (not a bundle, a bad signature) is, on every
// poll, and rejected at read or verify.
func (s *HTTPSource) Poll(ctx context.Context) error {
	if err := s.init(); err != nil {
		return s.Activator.sourceFailed(RedactURL(s.URL), err)
	}
	return s.Activator.sourceFailed(s.shown, s.poll(ctx))
}

func (s *HTTPSource) poll(ctx context.Context) error {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultHTTPTimeout
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s.pollCtx, s.called = ctx, make(chan struct{}, 1)
	err := s.dl.Trigger(dctx)
	// The downloader calls back once per download, even after Trigger
	// returned early on the deadline: wait, so no two downloads overlap.
	<-s.called
	if err == nil {
		return nil
	}
	var aerr *ActivationError
	if errors.As(err, &aerr) {
		return aerr
	}
	return s.failed(err)
}

// failed sorts a download error: the server's answer or an unreachable
// server is a failure of the source; an archive OPA's reader refuses is a
// rejected bundle.
func (s *HTTPSource) failed(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 0 {
		err = j.Unwrap()[0]
	}
	var herr download.HTTPError
	switch {
	case s.oci != nil && !strings.HasPrefix(err.Error(), "unexpected error "):
		// The OCI downloader wraps its reader's errors so; every other is
		// the registry's answer or the way there.
		return fmt.Errorf("unable to fetch bundle %s: %w", s.shown, s.redact(err))
	case errors.As(err, &herr):
		return fmt.Errorf("unable to fetch bundle %s: %d %s", s.shown, herr.StatusCode, http.StatusText(herr.StatusCode))
	case strings.HasPrefix(err.Error(), "request failed: "):
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		return fmt.Errorf("unable to fetch bundle %s: %w", s.shown, s.redact(err))
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return fmt.Errorf("unable to fetch bundle %s: %w", s.shown, err)
	}
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "verification key not provided"):
		return s.Activator.reject(s.shown, StepVerify, fmt.Errorf("%w: %w (the bundle is signed: set bundle.verificationKey to verify it)", ErrVerification, s.redact(err)))
	case strings.Contains(msg, "signature") || strings.Contains(msg, "verif") || strings.Contains(msg, "digest") ||
		strings.Contains(msg, "scope") || strings.Contains(msg, "jwt") || strings.Contains(msg, "key id"):
		return s.Activator.reject(s.shown, StepVerify, fmt.Errorf("%w: %w", ErrVerification, s.redact(err)))
	}
	return s.Activator.reject(s.shown, StepRead, fmt.Errorf("%w: %w", ErrInvalidBundle, s.redact(err)))
}

// update is the downloader's callback: a new archive (Raw) is written to a
// file and activated unless it is the one active already.
func (s *HTTPSource) update(_ context.Context, u download.Update) error {
	defer func() { s.called <- struct{}{} }()
	if u.Error != nil || u.Bundle == nil || u.Raw == nil {
		return nil
	}
	path, digest, err := saveBody(u.Raw)
	if err != nil {
		return fmt.Errorf("unable to fetch bundle %s: %w", s.shown, err)
	}
	defer os.RemoveAll(filepath.Dir(path))
	if digest == s.activated {
		// A server without ETags (a plain static file server) sends the
		// same bundle on every poll: it is already active.
		return nil
	}
	if err := s.Activator.activateFile(s.pollCtx, path, s.shown, s.Activator.opts.PersistDir != ""); err != nil {
		return err
	}
	s.activated = digest
	return nil
}

// Run polls until ctx ends, backing off after failed requests, then
// closes the source.
func (s *HTTPSource) Run(ctx context.Context) error {
	defer s.Close()
	return run(ctx, s.Activator, s.Poll, func(failures int) time.Duration {
		return Backoff(interval(s.Interval), s.MaxBackoff, failures)
	})
}

// redact replaces the source's credentials in an error's text.
func (s *HTTPSource) redact(err error) error {
	err = redactError(err)
	msg := err.Error()
	out := msg
	for _, secret := range s.secrets {
		if len(secret) >= 3 {
			out = strings.ReplaceAll(out, secret, redactedValue)
		}
	}
	if out == msg {
		return err
	}
	return errors.New(out)
}

// urlSecrets are the password and query values of a URL.
func urlSecrets(ref string) []string {
	u, err := url.Parse(ref)
	if err != nil {
		return nil
	}
	var out []string
	if pw, ok := u.User.Password(); ok {
		out = append(out, pw, url.QueryEscape(pw))
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			out = append(out, v, url.QueryEscape(v))
		}
	}
	return out
}

// serviceConfig is the OPA service a bundle URL is fetched from, given the
// service configuration (YAML or JSON, may be empty) and the legacy bearer
// token and CA settings: the service configuration as JSON and the bundle's
// path under the service's url.
func serviceConfig(ref string, service []byte, token, tokenFile, caFile string) ([]byte, string, error) {
	svc := map[string]any{}
	if len(strings.TrimSpace(string(service))) > 0 {
		if err := util.Unmarshal(service, &svc); err != nil {
			return nil, "", fmt.Errorf("unable to read the service configuration: %w", err)
		}
		if svc == nil {
			svc = map[string]any{}
		}
	}
	if t, _ := svc["type"].(string); t != "" && !(t == "oci" && strings.HasPrefix(ref, "oci://")) {
		return nil, "", fmt.Errorf("the service configuration has type %q: an oci:// bundle source sets type oci itself, and other sources have none", t)
	}
	svcURL, _ := svc["url"].(string)
	u, err := url.Parse(ref)
	if err != nil || u.Host == "" {
		return nil, "", errors.New("not a URL with a host")
	}
	var path string
	switch u.Scheme {
	case "http", "https":
		if svcURL != "" {
			return nil, "", errors.New("the service configuration's url is the endpoint of s3:// and oci:// sources; an http(s) bundle URL names its server itself")
		}
		svc["url"] = (&url.URL{Scheme: u.Scheme, User: u.User, Host: u.Host}).String()
		path = strings.TrimPrefix(u.EscapedPath(), "/")
		if u.RawQuery != "" {
			path += "?" + u.RawQuery
		}
	case "s3":
		bucket, key := u.Host, strings.TrimPrefix(u.Path, "/")
		if key == "" || u.RawQuery != "" {
			return nil, "", errors.New("an S3 bundle is s3://bucket/key")
		}
		if svcURL != "" {
			path = bucket + "/" + key
		} else {
			host := bucket + ".s3.amazonaws.com"
			if region := os.Getenv("AWS_REGION"); region != "" {
				host = bucket + ".s3." + region + ".amazonaws.com"
			}
			svc["url"], path = "https://"+host, key
		}
	case "oci":
		repo := strings.TrimPrefix(u.Path, "/")
		if repo == "" || u.RawQuery != "" || u.User != nil {
			return nil, "", errors.New("an OCI bundle is oci://registry/repository:tag (or @sha256:digest)")
		}
		svc["type"] = "oci"
		if svcURL == "" {
			svc["url"] = "https://" + u.Host
		}
		path = u.Host + "/" + repo
	default:
		return nil, "", fmt.Errorf("%s:// is not supported: an http(s) URL, s3://bucket/key or oci://registry/repository:tag", u.Scheme)
	}
	creds, _ := svc["credentials"].(map[string]any)
	if token != "" || tokenFile != "" {
		if len(creds) > 0 {
			return nil, "", errors.New("a bearer token file and the service configuration's credentials are both set: give one")
		}
		bearer := map[string]any{"token": token}
		if tokenFile != "" {
			bearer = map[string]any{"token_path": tokenFile}
		}
		creds = map[string]any{"bearer": bearer}
	}
	if u.Scheme == "s3" && len(creds) == 0 {
		// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION.
		creds = map[string]any{"s3_signing": map[string]any{"environment_credentials": map[string]any{}}}
	}
	if creds != nil {
		svc["credentials"] = creds
	}
	if caFile != "" {
		tls, _ := svc["tls"].(map[string]any)
		if tls == nil {
			tls = map[string]any{}
		}
		if _, set := tls["ca_cert"]; set {
			return nil, "", errors.New("a CA file and the service configuration's tls.ca_cert are both set: give one")
		}
		tls["ca_cert"] = caFile
		svc["tls"] = tls
	}
	cfg, err := json.Marshal(svc)
	if err != nil {
		return nil, "", err
	}
	return cfg, path, nil
}

// saveBody writes a downloaded archive, at most MaxBundleBytes, to a file
// in a new temporary directory, and returns its SHA-256 too.
func saveBody(body io.Reader) (string, string, error) {
	dir, err := os.MkdirTemp("", "mandate-bundle-")
	if err != nil {
		return "", "", err
	}
	path := filepath.Join(dir, "bundle.tar.gz")
	f, err := os.Create(path)
	if err != nil {
		os.RemoveAll(dir)
		return "", "", err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(body, MaxBundleBytes+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > MaxBundleBytes {
		err = fmt.Errorf("%w: larger than %d bytes", ErrInvalidBundle, MaxBundleBytes)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", "", err
	}
	return path, hex.EncodeToString(h.Sum(nil)), nil
}
