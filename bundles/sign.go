package bundles

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/keys"
)

// DefaultKeyID is the key id OPA's CLI signs and verifies with when none is
// given (`opa build --verification-key-id` defaults to it).
const DefaultKeyID = "default"

// DefaultAlgorithm is the signing algorithm when none is given.
const DefaultAlgorithm = "RS256"

// SignOptions configure Sign.
type SignOptions struct {
	// Key is the path of a PEM private key (RSA or ECDSA), PEM data itself,
	// or an HMAC secret.
	Key string
	// Algorithm is a JWA name: RS256 (default), RS384, RS512, PS256…,
	// ES256, ES384, ES512, HS256….
	Algorithm string
	// KeyID is the "kid" of the signature; DefaultKeyID when empty.
	KeyID string
	// Scope, when set, is the "scope" claim verifiers must expect.
	Scope string
	// ClaimsFile is an optional JSON file of extra claims, as `opa sign
	// --claims-file`; Scope overrides its "scope".
	ClaimsFile string
}

// Sign replaces b's .signatures.json with one JWT, signed with OPA's default
// signer, over the SHA-256 digest of every file in the bundle.
func Sign(b *bundle.Bundle, opts SignOptions) error {
	if opts.Key == "" {
		return fmt.Errorf("unable to sign bundle: no signing key")
	}
	if opts.Algorithm == "" {
		opts.Algorithm = DefaultAlgorithm
	}
	if !keys.IsSupportedAlgorithm(opts.Algorithm) {
		return fmt.Errorf("unable to sign bundle: unsupported signing algorithm %q", opts.Algorithm)
	}
	if opts.KeyID == "" {
		opts.KeyID = DefaultKeyID
	}
	if !strings.HasPrefix(opts.Algorithm, "HS") && !strings.HasPrefix(strings.TrimSpace(opts.Key), "-----BEGIN") {
		// OPA would take a mistyped path for the key itself and fail to
		// parse it: say the file is missing.
		if _, err := os.Stat(opts.Key); err != nil {
			return fmt.Errorf("unable to read signing key: %w (an HMAC secret needs --signing-alg HS256)", err)
		}
	}
	claimsPath, cleanup, err := claimsFile(opts)
	if err != nil {
		return err
	}
	defer cleanup()
	sc := bundle.NewSigningConfig(opts.Key, opts.Algorithm, claimsPath)
	if err := b.GenerateSignature(sc, opts.KeyID, true); err != nil {
		return fmt.Errorf("unable to sign bundle with %s: %w", opts.Algorithm, err)
	}
	return nil
}

// claimsFile returns the claims file OPA's signer should read: the given one,
// or, when a scope is set, a temporary copy with the scope (and the
// deprecated keyid claim OPA adds when there is no claims file).
func claimsFile(opts SignOptions) (string, func(), error) {
	noop := func() {}
	if opts.Scope == "" {
		return opts.ClaimsFile, noop, nil
	}
	claims := map[string]any{}
	if opts.ClaimsFile != "" {
		data, err := os.ReadFile(opts.ClaimsFile)
		if err != nil {
			return "", noop, fmt.Errorf("unable to read claims file: %w", err)
		}
		if err := json.Unmarshal(data, &claims); err != nil {
			return "", noop, fmt.Errorf("unable to read claims file %q: %w", opts.ClaimsFile, err)
		}
	} else {
		claims["keyid"] = opts.KeyID
	}
	claims["scope"] = opts.Scope
	data, err := json.Marshal(claims)
	if err != nil {
		return "", noop, fmt.Errorf("unable to write claims: %w", err)
	}
	f, err := os.CreateTemp("", "mandate-claims-*.json")
	if err != nil {
		return "", noop, fmt.Errorf("unable to write claims: %w", err)
	}
	cleanup := func() { os.Remove(f.Name()) }
	if _, err := f.Write(data); err != nil {
		f.Close()
		cleanup()
		return "", noop, fmt.Errorf("unable to write claims: %w", err)
	}
	if err := f.Close(); err != nil {
		cleanup()
		return "", noop, fmt.Errorf("unable to write claims: %w", err)
	}
	return f.Name(), cleanup, nil
}

// SignFile reads the bundle at in (without verifying any signature it has),
// signs it and writes it to out.
func SignFile(in, out string, opts SignOptions) error {
	data, err := readArchive(in)
	if err != nil {
		return err
	}
	b, err := readUnverified(in, data)
	if err != nil {
		return err
	}
	if err := Sign(b, opts); err != nil {
		return err
	}
	return WriteFile(out, b)
}
