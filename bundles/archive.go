package bundles

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
)

// MaxBundleBytes bounds the size of a bundle archive read from disk, and of
// each file in it once decompressed.
const MaxBundleBytes = 64 << 20

// DefaultRoot is the one data root Mandate's authority model lives under.
const DefaultRoot = "mandate"

var (
	// ErrInvalidBundle is returned for a file that is not a readable OPA
	// bundle: a truncated or corrupted archive, malformed JSON, Rego that
	// does not parse, or a manifest its contents contradict.
	ErrInvalidBundle = errors.New("invalid bundle")
	// ErrUnsigned is returned when a signature is required and the bundle
	// carries no .signatures.json.
	ErrUnsigned = errors.New("bundle is not signed (no .signatures.json)")
	// ErrVerification is returned when a bundle's signature does not verify:
	// wrong key, wrong key id or scope, or a file whose digest does not
	// match the signed one.
	ErrVerification = errors.New("bundle signature verification failed")
)

// readArchive reads a bundle file into memory, refusing files larger than
// MaxBundleBytes.
func readArchive(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("unable to read bundle %q: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxBundleBytes+1))
	if err != nil {
		return nil, fmt.Errorf("unable to read bundle %q: %w", path, err)
	}
	if len(data) > MaxBundleBytes {
		return nil, fmt.Errorf("unable to read bundle %q: %w: larger than %d bytes", path, ErrInvalidBundle, MaxBundleBytes)
	}
	return data, nil
}

// newReader is OPA's bundle reader over an in-memory archive, parsing Rego
// as v1 unless the manifest says otherwise (Load then refuses it).
func newReader(data []byte) *bundle.Reader {
	return bundle.NewCustomReader(bundle.NewTarballLoader(bytes.NewReader(data)).WithSizeLimitBytes(MaxBundleBytes)).
		WithRegoVersion(ast.RegoV1).
		WithProcessAnnotations(true).
		WithSizeLimitBytes(MaxBundleBytes)
}

// readUnverified parses an archive without looking at its signature.
func readUnverified(path string, data []byte) (*bundle.Bundle, error) {
	b, err := newReader(data).WithSkipBundleVerification(true).Read()
	if err != nil {
		return nil, fmt.Errorf("unable to read bundle %q: %w: %w", path, ErrInvalidBundle, err)
	}
	return &b, nil
}

// Write serializes b as a tar.gz OPA bundle, module files at their paths and
// their bytes as they are (no reformatting, so signatures stay valid).
func Write(w io.Writer, b *bundle.Bundle) error {
	if err := bundle.NewWriter(w).UseModulePath(true).DisableFormat(true).Write(*b); err != nil {
		return fmt.Errorf("unable to write bundle: %w", err)
	}
	return nil
}

// WriteFile writes b to path atomically: to a temporary file beside it, then
// renamed over it.
func WriteFile(path string, b *bundle.Bundle) error {
	var buf bytes.Buffer
	if err := Write(&buf, b); err != nil {
		return err
	}
	if info, err := os.Stat(path); err == nil && !info.Mode().IsRegular() {
		// A device or pipe (/dev/stdout): write through, never rename over it.
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("unable to write bundle %q: %w", path, err)
		}
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("unable to write bundle %q: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("unable to write bundle %q: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("unable to write bundle %q: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("unable to write bundle %q: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("unable to write bundle %q: %w", path, err)
	}
	return nil
}
