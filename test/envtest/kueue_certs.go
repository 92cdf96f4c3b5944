package envtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/certs"
)

const (
	// kueueCAName is the name Kueue's rotator gives its CA and checks the
	// CA in the Secret against (its DNS name).
	kueueCAName = "kueue-ca"
	// kueueCALifetime and kueueServingLifetime outlast the rotator's
	// look-ahead (90 days), so that it keeps them.
	kueueCALifetime      = 10 * 365 * 24 * time.Hour
	kueueServingLifetime = 365 * 24 * time.Hour
)

// kueueCertificates is the Secret Kueue's certificate rotator reads, in the
// layout it writes (ca.crt, ca.key, tls.crt, tls.key), holding a CA it
// accepts as its own and a serving certificate for Kueue's webhook Service
// that also names 127.0.0.1.
func kueueCertificates(now time.Time) (*corev1.Secret, error) {
	// An RSA key in PKCS#1: what the rotator parses when it renews the
	// serving certificate.
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("unable to generate Kueue's CA key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("unable to generate a serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: kueueCAName, Organization: []string{"kueue"}},
		DNSNames:              []string{kueueCAName},
		NotBefore:             now.Add(-certs.Backdate),
		NotAfter:              now.Add(kueueCALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("unable to sign Kueue's CA: %w", err)
	}
	ca, err := certs.ParseKeyPair(
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	if err != nil {
		return nil, fmt.Errorf("unable to parse Kueue's CA: %w", err)
	}
	serving, err := certs.IssueServing(ca, []string{kueueWebhookService + "." + KueueNamespace + ".svc", "127.0.0.1"}, now, kueueServingLifetime)
	if err != nil {
		return nil, fmt.Errorf("unable to issue Kueue's serving certificate: %w", err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: kueueWebhookSecret, Namespace: KueueNamespace},
		Data: map[string][]byte{
			"ca.crt":                ca.CertPEM,
			"ca.key":                ca.KeyPEM,
			corev1.TLSCertKey:       serving.CertPEM,
			corev1.TLSPrivateKeyKey: serving.KeyPEM,
		},
	}, nil
}
