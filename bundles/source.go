package bundles

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
)

// Defaults of SourceOptions.
const (
	DefaultPollInterval = 30 * time.Second
	DefaultMaxBackoff   = 5 * time.Minute
	DefaultHTTPTimeout  = 30 * time.Second
)

// Source feeds an Activator: Poll checks once for a new bundle and
// activates it; Run polls until ctx ends.
type Source interface {
	Poll(ctx context.Context) error
	Run(ctx context.Context) error
}

// SourceOptions configure where `mandate serve` takes its bundles from and
// how they are activated. Exactly one of File, Dir and URL is set.
type SourceOptions struct {
	// File is a bundle file, re-read when its modification time or size
	// changes.
	File string
	// Dir is a bundle directory (LoadDir), re-read when a file in it
	// changes.
	Dir string
	// URL is a bundle served over HTTP(S), polled with If-None-Match.
	URL string
	// Interval between polls; DefaultPollInterval when zero.
	Interval time.Duration
	// MaxBackoff caps the delay after failed polls; DefaultMaxBackoff when zero.
	MaxBackoff time.Duration
	// Timeout bounds one HTTP request; DefaultHTTPTimeout when zero.
	Timeout time.Duration
	// BearerToken, or the file holding it (re-read on every poll), is sent
	// as Authorization: Bearer.
	BearerToken     string
	BearerTokenFile string
	// CAFile holds the PEM certificates that sign the bundle server's;
	// the system roots when empty.
	CAFile string
	// Activator settings: verification, persistence.
	Activator ActivatorOptions
}

// SourceFor is the SourceOptions of a --bundle value: an http:// or
// https:// URL, else a directory when ref is one, else a file path.
func SourceFor(ref string) SourceOptions {
	if strings.HasPrefix(ref, "http://") || strings.HasPrefix(ref, "https://") {
		return SourceOptions{URL: ref}
	}
	if info, err := os.Stat(ref); err == nil && info.IsDir() {
		return SourceOptions{Dir: ref}
	}
	return SourceOptions{File: ref}
}

// NewSource builds the Activator and the Source the options describe.
func NewSource(o SourceOptions) (*Activator, Source, error) {
	a, err := NewActivator(o.Activator)
	if err != nil {
		return nil, nil, err
	}
	set := 0
	for _, ref := range []string{o.File, o.Dir, o.URL} {
		if ref != "" {
			set++
		}
	}
	switch {
	case set > 1:
		return nil, nil, errors.New("a bundle source is one file, directory or URL, not several")
	case o.File != "":
		return a, &FileSource{Path: o.File, Interval: o.Interval, Activator: a}, nil
	case o.Dir != "":
		return a, &DirSource{Path: o.Dir, Interval: o.Interval, Activator: a}, nil
	case o.URL != "":
		s := &HTTPSource{URL: o.URL, Interval: o.Interval, MaxBackoff: o.MaxBackoff, Timeout: o.Timeout,
			BearerToken: o.BearerToken, BearerTokenFile: o.BearerTokenFile, CAFile: o.CAFile, Activator: a}
		if _, err := s.client(); err != nil {
			return nil, nil, err
		}
		return a, s, nil
	}
	return nil, nil, errors.New("no bundle source: set a bundle file, directory or URL")
}

// FileSource activates a bundle file and re-activates it whenever its
// modification time or size changes.
type FileSource struct {
	Path string
	// Interval between checks; DefaultPollInterval when zero.
	Interval  time.Duration
	Activator *Activator

	seen    bool
	modTime time.Time
	size    int64
}

// Poll activates the file if it changed since the last poll. A file that
// fails to activate is not retried until it changes again.
func (s *FileSource) Poll(ctx context.Context) error {
	return s.Activator.sourceFailed(s.Path, s.poll(ctx))
}

func (s *FileSource) poll(ctx context.Context) error {
	info, err := os.Stat(s.Path)
	if err != nil {
		return fmt.Errorf("unable to read bundle %q: %w", s.Path, err)
	}
	if s.seen && info.ModTime().Equal(s.modTime) && info.Size() == s.size {
		return nil
	}
	s.seen, s.modTime, s.size = true, info.ModTime(), info.Size()
	return s.Activator.Activate(ctx, s.Path)
}

// Run polls until ctx ends.
func (s *FileSource) Run(ctx context.Context) error {
	return run(ctx, s.Activator, s.Poll, func(int) time.Duration { return interval(s.Interval) })
}

// HTTPSource polls a bundle server with If-None-Match: a 304 is no change,
// a 200 a new bundle to activate. Failed requests back off exponentially up
// to MaxBackoff.
type HTTPSource struct {
	URL string
	// Interval between polls; DefaultPollInterval when zero.
	Interval time.Duration
	// MaxBackoff caps the delay after failures; DefaultMaxBackoff when zero.
	MaxBackoff time.Duration
	// Timeout bounds one request; DefaultHTTPTimeout when zero.
	Timeout         time.Duration
	BearerToken     string
	BearerTokenFile string
	CAFile          string
	Activator       *Activator
	// Client replaces the client built from Timeout and CAFile.
	Client *http.Client

	etag string
	// activated is the SHA-256 of the last bundle this source activated.
	activated string
}

func (s *HTTPSource) client() (*http.Client, error) {
	if s.Client != nil {
		return s.Client, nil
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultHTTPTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("unable to read the bundle server's CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("bundle server CA %q holds no PEM certificate", s.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	s.Client = &http.Client{Timeout: timeout, Transport: tr}
	return s.Client, nil
}

// Poll fetches the bundle unless unchanged (304) and activates it. The
// ETag of a fetched bundle is remembered whether or not it activates, so a
// rejected bundle is not downloaded again until the server's changes.
func (s *HTTPSource) Poll(ctx context.Context) error {
	return s.Activator.sourceFailed(RedactURL(s.URL), s.poll(ctx))
}

func (s *HTTPSource) poll(ctx context.Context) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	shown := RedactURL(s.URL)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return fmt.Errorf("bundle URL %q: %w", shown, redactError(err))
	}
	if s.etag != "" {
		req.Header.Set("If-None-Match", s.etag)
	}
	token := s.BearerToken
	if s.BearerTokenFile != "" {
		data, err := os.ReadFile(s.BearerTokenFile)
		if err != nil {
			return fmt.Errorf("unable to read the bundle server token: %w", err)
		}
		token = strings.TrimSpace(string(data))
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("unable to fetch bundle %s: %w", shown, redactError(err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified:
		return nil
	case resp.StatusCode != http.StatusOK:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("unable to fetch bundle %s: %s", shown, resp.Status)
	}
	path, digest, err := download(resp.Body)
	if err != nil {
		return fmt.Errorf("unable to fetch bundle %s: %w", shown, err)
	}
	defer os.RemoveAll(filepath.Dir(path))
	s.etag = resp.Header.Get("ETag")
	if digest == s.activated {
		// A server without ETags (a plain static file server) sends the
		// same bundle on every poll: it is already active.
		return nil
	}
	if err := s.Activator.activateFile(ctx, path, shown, s.Activator.opts.PersistDir != ""); err != nil {
		return err
	}
	s.activated = digest
	return nil
}

// download writes a response body, at most MaxBundleBytes, to a file in a
// new temporary directory, and returns its SHA-256 too.
func download(body io.Reader) (string, string, error) {
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

// Run polls until ctx ends, backing off after failed requests.
func (s *HTTPSource) Run(ctx context.Context) error {
	return run(ctx, s.Activator, s.Poll, func(failures int) time.Duration {
		return Backoff(interval(s.Interval), s.MaxBackoff, failures)
	})
}

// Backoff is the delay after a number of consecutive failures: the
// interval, doubled per failure, at most maxDelay (DefaultMaxBackoff when
// zero) unless the interval is longer.
func Backoff(interval, maxDelay time.Duration, failures int) time.Duration {
	if maxDelay <= 0 {
		maxDelay = DefaultMaxBackoff
	}
	d := interval
	for range failures {
		if d >= maxDelay {
			break
		}
		d *= 2
	}
	return max(interval, min(d, maxDelay))
}

func interval(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultPollInterval
	}
	return d
}

// run polls, falls back to the persisted bundle when the first poll leaves
// nothing active, and polls again after delay(consecutive failures) until
// ctx ends. A rejected bundle is no failure of the source: its error is
// logged and the status records it.
func run(ctx context.Context, a *Activator, poll func(context.Context) error, delay func(int) time.Duration) error {
	log := logr.FromContextOrDiscard(ctx).WithName("bundles")
	if a.opts.Shadow {
		log = log.WithValues("shadow", true)
	}
	failures := 0
	for first := true; ; first = false {
		before := a.Status().ActivatedAt
		err := poll(ctx)
		var aerr *ActivationError
		switch {
		case err == nil:
			failures = 0
			if st := a.Status(); !st.ActivatedAt.Equal(before) {
				log.Info("bundle activated", "revision", st.Revision, "source", st.Source)
			}
		case errors.As(err, &aerr):
			failures = 0
			log.Error(err, "bundle rejected", "step", aerr.Step, "revision", a.Status().Revision)
		default:
			failures++
			log.Error(err, "unable to poll the bundle source", "failures", failures)
		}
		if first && a.Current() == nil && a.opts.PersistDir != "" {
			if perr := a.LoadPersisted(ctx); perr != nil {
				log.Error(perr, "unable to activate the persisted bundle")
			} else {
				log.Info("serving the persisted last good bundle", "revision", a.Status().Revision)
			}
		}
		t := time.NewTimer(delay(failures))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}
