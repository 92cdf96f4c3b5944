package bundles

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/bundle"
)

// Info describes a bundle file as Inspect reads it, without verifying it.
type Info struct {
	Revision    string         `json:"revision"`
	Roots       []string       `json:"roots"`
	RegoVersion *int           `json:"rego_version,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	// Files are the archive's files, sorted by name, with their
	// uncompressed sizes.
	Files []File `json:"files"`
	// Signature is nil for an unsigned bundle.
	Signature *Signature `json:"signature,omitempty"`
}

// File is one file of a bundle archive.
type File struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
}

// Signature is what a bundle's .signatures.json says about its signer. It
// is read, not verified: use Verify for that.
type Signature struct {
	KeyID     string `json:"keyid"`
	Algorithm string `json:"algorithm"`
	Scope     string `json:"scope,omitempty"`
	// Files is how many files the signature covers.
	Files int `json:"files"`
}

// Inspect reads a bundle file's manifest, file list and signer.
func Inspect(path string) (Info, error) {
	data, err := readArchive(path)
	if err != nil {
		return Info{}, err
	}
	b, err := readUnverified(path, data)
	if err != nil {
		return Info{}, err
	}
	files, err := listFiles(data)
	if err != nil {
		return Info{}, fmt.Errorf("unable to read bundle %q: %w: %w", path, ErrInvalidBundle, err)
	}
	info := Info{
		Revision:    b.Manifest.Revision,
		RegoVersion: b.Manifest.RegoVersion,
		Metadata:    b.Manifest.Metadata,
		Files:       files,
	}
	if b.Manifest.Roots != nil {
		info.Roots = *b.Manifest.Roots
	}
	sigs, err := readSignatures(data)
	if err != nil {
		return Info{}, fmt.Errorf("unable to read bundle %q: %w: %w", path, ErrInvalidBundle, err)
	}
	if sigs != nil {
		if info.Signature, err = describeSignature(*sigs); err != nil {
			return Info{}, fmt.Errorf("unable to read the signature of bundle %q: %w: %w", path, ErrInvalidBundle, err)
		}
	}
	return info, nil
}

// listFiles walks the archive with OPA's tarball loader.
func listFiles(data []byte) ([]File, error) {
	loader := bundle.NewTarballLoader(bytes.NewReader(data)).WithSizeLimitBytes(MaxBundleBytes)
	var files []File
	for {
		d, err := loader.NextFile()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		n, err := d.Read(io.Discard, MaxBundleBytes)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		files = append(files, File{Name: strings.TrimPrefix(d.Path(), "/"), Size: n})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// readSignatures returns the archive's .signatures.json, or nil when there
// is none.
func readSignatures(data []byte) (*bundle.SignaturesConfig, error) {
	loader := bundle.NewTarballLoader(bytes.NewReader(data)).WithSizeLimitBytes(MaxBundleBytes)
	for {
		d, err := loader.NextFile()
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if !bundle.IsSignaturesFile(d.Path()) {
			continue
		}
		var buf bytes.Buffer
		if _, err := d.Read(&buf, MaxBundleBytes); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		var sc bundle.SignaturesConfig
		if err := json.Unmarshal(buf.Bytes(), &sc); err != nil {
			return nil, fmt.Errorf(".signatures.json: %w", err)
		}
		return &sc, nil
	}
}

// describeSignature decodes (without verifying) the JWT of a
// .signatures.json: its header's alg and kid, its payload's scope and files.
func describeSignature(sc bundle.SignaturesConfig) (*Signature, error) {
	if len(sc.Signatures) != 1 {
		return nil, fmt.Errorf(".signatures.json: %d JWTs (expected exactly one)", len(sc.Signatures))
	}
	parts := strings.Split(sc.Signatures[0], ".")
	if len(parts) != 3 {
		return nil, errors.New(".signatures.json: not a compact JWT")
	}
	var header struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := decodeSegment(parts[0], &header); err != nil {
		return nil, fmt.Errorf(".signatures.json: JWT header: %w", err)
	}
	var payload bundle.DecodedSignature
	if err := decodeSegment(parts[1], &payload); err != nil {
		return nil, fmt.Errorf(".signatures.json: JWT payload: %w", err)
	}
	s := &Signature{KeyID: header.Kid, Algorithm: header.Alg, Scope: payload.Scope, Files: len(payload.Files)}
	if s.KeyID == "" {
		s.KeyID = payload.KeyID
	}
	return s, nil
}

func decodeSegment(seg string, v any) error {
	data, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
