package bundles

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strings"

	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/keys"
)

// VerifyOptions configure signature verification.
type VerifyOptions struct {
	// PublicKey is the path of a PEM public key (or certificate), PEM data
	// itself, or an HMAC secret.
	PublicKey string
	// KeyID is the id the public key is known by; DefaultKeyID when empty.
	// The signature's "kid" must name it.
	KeyID string
	// Algorithm is the JWA algorithm of the key; inferred from a PEM key
	// when empty (RSA: RS256, ECDSA P-256/384/521: ES256/384/512). An HMAC
	// secret needs it set (HS256…).
	Algorithm string
	// Scope, when set, must equal the signature's "scope" claim.
	Scope string
}

// Verify checks the signature of the bundle at path: ErrInvalidBundle when
// the archive cannot be read, ErrUnsigned when it has no .signatures.json,
// ErrVerification when the signature or a file digest does not verify.
func Verify(path string, opts VerifyOptions) error {
	data, err := readArchive(path)
	if err != nil {
		return err
	}
	_, err = readVerified(path, data, opts)
	return err
}

// readVerified reads an archive and verifies its signature, telling a
// corrupted archive, a missing signature and a bad one apart.
func readVerified(path string, data []byte, opts VerifyOptions) (*bundle.Bundle, error) {
	vc, err := opts.verificationConfig()
	if err != nil {
		return nil, err
	}
	if _, err := readUnverified(path, data); err != nil {
		return nil, err
	}
	sigs, err := readSignatures(data)
	if err != nil {
		return nil, fmt.Errorf("unable to read bundle %q: %w: %w", path, ErrInvalidBundle, err)
	}
	if sigs == nil {
		return nil, fmt.Errorf("bundle %q: %w", path, ErrUnsigned)
	}
	// OPA lets a configured key id override the signature's; Mandate
	// requires them to agree when the signature names one (`opa sign`
	// names none).
	if sig, err := describeSignature(*sigs); err != nil {
		return nil, fmt.Errorf("bundle %q: %w: %w", path, ErrVerification, err)
	} else if sig.KeyID != "" && sig.KeyID != vc.KeyID {
		return nil, fmt.Errorf("bundle %q: %w: signed with key id %q, verifying with key id %q", path, ErrVerification, sig.KeyID, vc.KeyID)
	}
	b, err := newReader(data).WithBundleVerificationConfig(vc).Read()
	if err != nil {
		return nil, fmt.Errorf("bundle %q: %w: %w", path, ErrVerification, err)
	}
	return &b, nil
}

func (o VerifyOptions) verificationConfig() (*bundle.VerificationConfig, error) {
	if o.PublicKey == "" {
		return nil, fmt.Errorf("unable to verify bundle: no verification key")
	}
	if o.KeyID == "" {
		o.KeyID = DefaultKeyID
	}
	if !strings.HasPrefix(o.Algorithm, "HS") && !strings.HasPrefix(strings.TrimSpace(o.PublicKey), "-----BEGIN") {
		// OPA would take a mistyped path for an HMAC secret.
		if _, err := os.Stat(o.PublicKey); err != nil {
			return nil, fmt.Errorf("unable to read verification key: %w (an HMAC secret needs --signing-alg HS256)", err)
		}
	}
	kc, err := keys.NewKeyConfig(o.PublicKey, o.Algorithm, o.Scope)
	if err != nil {
		return nil, fmt.Errorf("unable to read verification key: %w", err)
	}
	if o.Algorithm == "" {
		if kc.Algorithm, err = inferAlgorithm(kc.Key); err != nil {
			return nil, err
		}
	}
	if !keys.IsSupportedAlgorithm(kc.Algorithm) {
		return nil, fmt.Errorf("unable to verify bundle: unsupported signing algorithm %q", kc.Algorithm)
	}
	return bundle.NewVerificationConfig(map[string]*bundle.KeyConfig{o.KeyID: kc}, o.KeyID, o.Scope, nil), nil
}

// inferAlgorithm picks the JWA algorithm a PEM public key signs with.
func inferAlgorithm(key string) (string, error) {
	block, _ := pem.Decode([]byte(key))
	if block == nil {
		if strings.HasPrefix(strings.TrimSpace(key), "-----BEGIN") {
			return "", fmt.Errorf("unable to read verification key: malformed PEM")
		}
		return "", fmt.Errorf("unable to read verification key: not PEM (an HMAC secret needs --signing-alg HS256)")
	}
	var pub any
	var err error
	switch block.Type {
	case "RSA PUBLIC KEY":
		pub, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "PUBLIC KEY":
		pub, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			pub = cert.PublicKey
		}
	default:
		return "", fmt.Errorf("unable to read verification key: unsupported PEM block %q (want a public key or certificate)", block.Type)
	}
	if err != nil {
		return "", fmt.Errorf("unable to read verification key: %w", err)
	}
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return "RS256", nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return "ES256", nil
		case elliptic.P384():
			return "ES384", nil
		case elliptic.P521():
			return "ES512", nil
		}
		return "", fmt.Errorf("unable to read verification key: unsupported ECDSA curve %s", k.Curve.Params().Name)
	}
	return "", fmt.Errorf("unable to read verification key: unsupported key type %T; pass --signing-alg", pub)
}
