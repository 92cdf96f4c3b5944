package webhook

import "crypto/tls"

// aeadSuites are the TLS 1.2 cipher suites the webhook server offers: ECDHE
// key exchange with an AEAD cipher only (no CBC, no RSA key exchange). TLS
// 1.3's suites are all AEAD and are not configurable.
var aeadSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// SecureTLS hardens a server's TLS configuration: TLS 1.2 at least, and
// only AEAD cipher suites. The webhook server (and a secure metrics
// server) take it as a TLSOpts entry.
func SecureTLS(c *tls.Config) {
	c.MinVersion = tls.VersionTLS12
	c.CipherSuites = aeadSuites
}
