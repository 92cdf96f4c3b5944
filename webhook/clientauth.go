package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// ClientAuth returns the TLS option that admits only callers presenting a
// client certificate signed by a CA of caFile (PEM) and, when cn is not
// empty, carrying that common name: the API server, set up to present one
// (docs/security.md). Anyone else fails the TLS handshake, before any
// request is read, so no decision is made and no quota is spent for them.
// The CAs are read once, here.
func ClientAuth(caFile, cn string) (func(*tls.Config), error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("unable to read the webhook's client CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the webhook's client CA file %s holds no PEM certificate", caFile)
	}
	return func(c *tls.Config) {
		c.ClientCAs = pool
		c.ClientAuth = tls.RequireAndVerifyClientCert
		if cn == "" {
			return
		}
		// Called after the chain is verified against ClientCAs.
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("no client certificate")
			}
			if got := cs.PeerCertificates[0].Subject.CommonName; got != cn {
				return fmt.Errorf("client certificate for %q, not %q", got, cn)
			}
			return nil
		}
	}, nil
}
