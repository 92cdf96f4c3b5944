package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Backdate is how far before issuance a certificate's NotBefore is set, so
// that an API server whose clock is a little behind already accepts it.
const Backdate = time.Hour

// Names of the files in the certificate directory, as controller-runtime's
// webhook server reads them.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
	// CAFile is the CA cert-manager writes beside them.
	CAFile = "ca.crt"
)

// KeyPair is a certificate with its private key, parsed and as PEM.
type KeyPair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// NewCA creates a self-signed CA certificate valid from now-Backdate to
// now+lifetime.
func NewCA(commonName string, now time.Time, lifetime time.Duration) (*KeyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"mandate"}},
		NotBefore:             now.Add(-Backdate),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return sign(tmpl, nil)
}

// IssueServing issues a serving certificate for hosts (DNS names or IP
// addresses) signed by ca, valid from now-Backdate to now+lifetime but
// never beyond the CA's own expiry.
func IssueServing(ca *KeyPair, hosts []string, now time.Time, lifetime time.Duration) (*KeyPair, error) {
	if len(hosts) == 0 {
		return nil, errors.New("a serving certificate needs at least one host")
	}
	notBefore, notAfter := leafValidity(ca, now, lifetime)
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0]},
		NotBefore:   notBefore,
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return sign(tmpl, ca)
}

// IssueClient issues a client certificate for commonName signed by ca
// (the certificate the API server presents to the webhooks when it is set
// up to authenticate to them), valid as IssueServing's.
func IssueClient(ca *KeyPair, commonName string, now time.Time, lifetime time.Duration) (*KeyPair, error) {
	notBefore, notAfter := leafValidity(ca, now, lifetime)
	return sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		NotBefore:   notBefore,
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca)
}

// leafValidity is a certificate's validity under ca: from now-Backdate
// to now+lifetime, within the CA's own.
func leafValidity(ca *KeyPair, now time.Time, lifetime time.Duration) (notBefore, notAfter time.Time) {
	notAfter = now.Add(lifetime)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	notBefore = now.Add(-Backdate)
	if notBefore.Before(ca.Cert.NotBefore) {
		notBefore = ca.Cert.NotBefore
	}
	return notBefore, notAfter
}

// sign generates an ECDSA P-256 key and signs tmpl with parent (itself
// when nil).
func sign(tmpl *x509.Certificate, parent *KeyPair) (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("unable to generate a key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("unable to generate a serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	issuer, signer := tmpl, crypto.Signer(key)
	if parent != nil {
		issuer, signer = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, key.Public(), signer)
	if err != nil {
		return nil, fmt.Errorf("unable to sign the certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("unable to encode the key: %w", err)
	}
	return ParseKeyPair(
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
}

// ParseKeyPair parses a PEM certificate and its PEM private key and checks
// that they belong together.
func ParseKeyPair(certPEM, keyPEM []byte) (*KeyPair, error) {
	cert, err := ParseCert(certPEM)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("no PEM private key")
	}
	var key any
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("unable to parse the private key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("the private key (%T) cannot sign", key)
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, errors.New("the private key does not match the certificate")
	}
	return &KeyPair{Cert: cert, Key: signer, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// ParseCert parses the first PEM certificate.
func ParseCert(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("unable to parse the certificate: %w", err)
	}
	return cert, nil
}

// ParseBundle parses every PEM certificate of a CA bundle.
func ParseBundle(bundle []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("unable to parse a certificate of the CA bundle: %w", err)
		}
		certs = append(certs, c)
	}
	return certs, nil
}

// BundleContains says whether the CA bundle holds cert.
func BundleContains(bundle []byte, cert *x509.Certificate) bool {
	certs, err := ParseBundle(bundle)
	if err != nil {
		return false
	}
	for _, c := range certs {
		if c.Equal(cert) {
			return true
		}
	}
	return false
}

// ValidAt says why cert is not valid at now, or nil when it is.
func ValidAt(cert *x509.Certificate, now time.Time) error {
	switch {
	case now.Before(cert.NotBefore):
		return fmt.Errorf("certificate %q is not valid before %s", cert.Subject.CommonName, cert.NotBefore.UTC().Format(time.RFC3339))
	case !now.Before(cert.NotAfter):
		return fmt.Errorf("certificate %q expired at %s", cert.Subject.CommonName, cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

// Verify checks that serving is a serving certificate for every host,
// signed by ca and valid at now, as the API server would check it.
func Verify(serving *x509.Certificate, ca *x509.Certificate, hosts []string, now time.Time) error {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, h := range hosts {
		if _, err := serving.Verify(x509.VerifyOptions{
			DNSName: h, Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}); err != nil {
			return fmt.Errorf("serving certificate does not verify for %s: %w", h, err)
		}
	}
	return nil
}

// ReadFiles reads tls.crt and tls.key from dir.
func ReadFiles(dir string) (*KeyPair, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, CertFile))
	if err != nil {
		return nil, fmt.Errorf("unable to read the serving certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, KeyFile))
	if err != nil {
		return nil, fmt.Errorf("unable to read the serving key: %w", err)
	}
	kp, err := ParseKeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("serving certificate in %s: %w", dir, err)
	}
	return kp, nil
}

// WriteFiles replaces tls.key and tls.crt in dir, each atomically (a
// temporary file renamed over it): a reader sees the old or the new file,
// never a partial one. The key goes first; controller-runtime's certificate
// watcher keeps serving the old pair while the two do not match.
func WriteFiles(dir string, kp *KeyPair) error {
	if err := writeAtomic(dir, KeyFile, kp.KeyPEM, 0o600); err != nil {
		return err
	}
	return writeAtomic(dir, CertFile, kp.CertPEM, 0o644)
}

func writeAtomic(dir, name string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return fmt.Errorf("unable to write %s: %w", name, err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("unable to write %s: %w", name, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("unable to write %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("unable to write %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("unable to write %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("unable to replace %s: %w", name, err)
	}
	return nil
}

// concat joins PEM certificates into one CA bundle.
func concat(pems ...[]byte) []byte {
	var b bytes.Buffer
	for _, p := range pems {
		b.Write(bytes.TrimSpace(p))
		b.WriteByte('\n')
	}
	return b.Bytes()
}
