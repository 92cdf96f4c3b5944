package bundles

import (
	"context"
	"errors"
	"fmt"
	"os"
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
	// URL is a bundle served over HTTP(S), or an s3://bucket/key object,
	// fetched by OPA's downloader (If-None-Match, ETags) with OPA's
	// credential plugins.
	URL string
	// Interval between polls; DefaultPollInterval when zero.
	Interval time.Duration
	// MaxBackoff caps the delay after failed polls; DefaultMaxBackoff when zero.
	MaxBackoff time.Duration
	// Timeout bounds one download; DefaultHTTPTimeout when zero.
	Timeout time.Duration
	// BearerToken, or the file holding it (re-read on every poll), is sent
	// as Authorization: Bearer.
	BearerToken     string
	BearerTokenFile string
	// CAFile holds the PEM certificates that sign the bundle server's;
	// the system roots when empty.
	CAFile string
	// Service is an OPA service configuration (YAML or JSON: url,
	// credentials, tls, headers), the client of a URL source; see
	// HTTPSource.Service.
	Service []byte
	// Activator settings: verification, persistence.
	Activator ActivatorOptions
}

// SourceFor is the SourceOptions of a --bundle value: an http://,
// https:// or s3:// URL, else a directory when ref is one, else a file path.
func SourceFor(ref string) SourceOptions {
	if IsURL(ref) {
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
			BearerToken: o.BearerToken, BearerTokenFile: o.BearerTokenFile, CAFile: o.CAFile, Service: o.Service, Activator: a}
		if err := s.init(); err != nil {
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
