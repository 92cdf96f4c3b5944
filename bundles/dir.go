package bundles

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/mandate-dev/mandate/evaluator"
)

// signaturesName is the file a signed bundle directory carries its
// signatures in (OPA's bundle.SignaturesFile lacks the dot).
const signaturesName = ".signatures.json"

// LoadDir reads a bundle directory into an evaluator.Policy: an unpacked
// bundle (with a .manifest) or a policy directory such as policies/. Its
// revision is the manifest's; without a manifest it is the Git commit of
// the directory ("-dirty-" and the content hash appended when the tree has
// changes under it), else "sha256-" and the content hash.
//
// With verify set, the directory must carry a .signatures.json that
// verifies (ErrUnsigned, ErrVerification), and is read exactly as signed;
// without, *_test.rego suites are left out and any signature is ignored.
func LoadDir(ctx context.Context, dir string, verify *VerifyOptions) (*evaluator.Policy, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("unable to read bundle directory %q: %w", dir, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("unable to read bundle directory %q: not a directory", dir)
	}
	b, err := readDir(dir, nil, verify == nil)
	if err != nil {
		return nil, fmt.Errorf("unable to read bundle directory %q: %w: %w", dir, ErrInvalidBundle, err)
	}
	if verify != nil {
		if b, err = readDirVerified(dir, *verify); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, bundle.ManifestExt)); errors.Is(err, fs.ErrNotExist) {
		revision, err := dirRevision(ctx, dir)
		if err != nil {
			return nil, err
		}
		roots, regoVersion := []string{DefaultRoot}, RegoVersion
		b.Manifest = bundle.Manifest{Revision: revision, Roots: &roots, RegoVersion: &regoVersion,
			Metadata: map[string]any{"mandate": map[string]any{"revisionSource": "directory"}}}
		if b, err = reread(b); err != nil {
			return nil, fmt.Errorf("unable to read bundle directory %q: %w: %w", dir, ErrInvalidBundle, err)
		}
	}
	return policyOf(dir, b)
}

// readDir reads a directory with OPA's bundle reader, verifying it with vc
// when set, leaving out test suites when skipTests.
func readDir(dir string, vc *bundle.VerificationConfig, skipTests bool) (*bundle.Bundle, error) {
	loader := bundle.NewDirectoryLoader(dir)
	if skipTests {
		loader = loader.WithFilter(func(_ string, info fs.FileInfo, _ int) bool {
			return !info.IsDir() && strings.HasSuffix(info.Name(), "_test.rego")
		})
	}
	r := bundle.NewCustomReader(loader).
		WithRegoVersion(ast.RegoV1).
		WithProcessAnnotations(true).
		WithSizeLimitBytes(MaxBundleBytes)
	if vc == nil {
		r = r.WithSkipBundleVerification(true)
	} else {
		r = r.WithBundleVerificationConfig(vc)
	}
	b, err := r.Read()
	if err != nil {
		return nil, err
	}
	return &b, nil
}

// readDirVerified reads a directory that must be signed with opts' key.
func readDirVerified(dir string, opts VerifyOptions) (*bundle.Bundle, error) {
	vc, err := opts.verificationConfig()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, signaturesName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("bundle directory %q: %w", dir, ErrUnsigned)
	} else if err != nil {
		return nil, fmt.Errorf("unable to read bundle directory %q: %w", dir, err)
	}
	var sc bundle.SignaturesConfig
	if err := json.Unmarshal(data, &sc); err != nil {
		return nil, fmt.Errorf("bundle directory %q: %w: .signatures.json: %w", dir, ErrVerification, err)
	}
	// As for archives: the signature's key id, when it names one, must be
	// the verifying key's.
	if sig, err := describeSignature(sc); err != nil {
		return nil, fmt.Errorf("bundle directory %q: %w: %w", dir, ErrVerification, err)
	} else if sig.KeyID != "" && sig.KeyID != vc.KeyID {
		return nil, fmt.Errorf("bundle directory %q: %w: signed with key id %q, verifying with key id %q", dir, ErrVerification, sig.KeyID, vc.KeyID)
	}
	b, err := readDir(dir, vc, false)
	if err != nil {
		return nil, fmt.Errorf("bundle directory %q: %w: %w", dir, ErrVerification, err)
	}
	return b, nil
}

// dirRevision is the revision of a directory without a manifest.
func dirRevision(ctx context.Context, dir string) (string, error) {
	hash, err := contentHash(dir)
	if err != nil {
		return "", fmt.Errorf("unable to read bundle directory %q: %w", dir, err)
	}
	revision, err := GitRevision(ctx, dir)
	switch {
	case errors.Is(err, ErrNoRevision):
		return "sha256-" + hash, nil
	case err != nil:
		return "", err
	case strings.HasSuffix(revision, "-dirty"):
		return revision + "-" + hash, nil
	}
	return revision, nil
}

// contentHash is the first 12 hex digits of the SHA-256 of every file's
// path and contents under dir, in lexical order.
func contentHash(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "%s\x00", filepath.ToSlash(rel))
		if _, err := io.Copy(h, io.LimitReader(f, MaxBundleBytes)); err != nil {
			return err
		}
		h.Write([]byte{0})
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// fingerprint identifies the state of a directory cheaply: every entry's
// path, size, mode and modification time, hashed.
func fingerprint(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00%d\x00", path, info.Size(), info.Mode(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ActivateDir reads the bundle directory dir and activates it. Directories
// are not persisted: they are read again after a restart.
func (a *Activator) ActivateDir(ctx context.Context, dir string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, err := LoadDir(ctx, dir, a.opts.Verify)
	if err != nil {
		return a.fail(dir, loadStep(err), err)
	}
	return a.activate(ctx, p, dir)
}

// DirSource activates a bundle directory and re-activates it whenever a
// file in it changes (its path, size, mode or modification time).
type DirSource struct {
	Path string
	// Interval between checks; DefaultPollInterval when zero.
	Interval  time.Duration
	Activator *Activator

	seen        bool
	fingerprint string
}

// Poll activates the directory if it changed since the last poll. A
// directory that fails to activate is not retried until it changes again.
func (s *DirSource) Poll(ctx context.Context) error {
	return s.Activator.sourceFailed(s.Path, s.poll(ctx))
}

func (s *DirSource) poll(ctx context.Context) error {
	fp, err := fingerprint(s.Path)
	if err != nil {
		return fmt.Errorf("unable to read bundle directory %q: %w", s.Path, err)
	}
	if s.seen && fp == s.fingerprint {
		return nil
	}
	s.seen, s.fingerprint = true, fp
	return s.Activator.ActivateDir(ctx, s.Path)
}

// Run polls until ctx ends.
func (s *DirSource) Run(ctx context.Context) error {
	return run(ctx, s.Activator, s.Poll, func(int) time.Duration { return interval(s.Interval) })
}
