package certs

import (
	"crypto/x509"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Keys of the CA Secret. The active CA signs serving certificates; the next
// one is published in the caBundle before it becomes active; the previous
// one stays in the caBundle until no serving certificate it signed can
// still be valid.
const (
	SecretCACert       = "ca.crt"
	SecretCAKey        = "ca.key"
	SecretNextCert     = "next.crt"
	SecretNextKey      = "next.key"
	SecretPreviousCert = "previous.crt"

	// AnnotationNextPublished is when the next CA was first seen in the
	// caBundle of every webhook configuration.
	AnnotationNextPublished = "certs.mandate.dev/next-published-at"
	// AnnotationPreviousRetire is when the previous CA leaves the caBundle.
	AnnotationPreviousRetire = "certs.mandate.dev/previous-retire-at"
)

// caState is the parsed CA Secret.
type caState struct {
	active   *KeyPair
	next     *KeyPair
	previous *x509.Certificate
	// previousPEM is the previous CA as stored.
	previousPEM []byte
	// nextPublished is zero until the next CA is in every caBundle.
	nextPublished  time.Time
	previousRetire time.Time
}

// parseState reads the CA Secret. An unparseable active CA is an error; an
// unparseable next or previous CA is dropped (with a note) since neither
// signs anything yet or any more.
func parseState(s *corev1.Secret) (caState, []string, error) {
	var st caState
	var notes []string
	active, err := ParseKeyPair(s.Data[SecretCACert], s.Data[SecretCAKey])
	if err != nil {
		return st, nil, fmt.Errorf("active CA (%s, %s): %w", SecretCACert, SecretCAKey, err)
	}
	st.active = active
	if len(s.Data[SecretNextCert]) > 0 {
		if st.next, err = ParseKeyPair(s.Data[SecretNextCert], s.Data[SecretNextKey]); err != nil {
			notes = append(notes, fmt.Sprintf("next CA dropped: %v", err))
			st.next = nil
		}
	}
	if len(s.Data[SecretPreviousCert]) > 0 {
		if st.previous, err = ParseCert(s.Data[SecretPreviousCert]); err != nil {
			notes = append(notes, fmt.Sprintf("previous CA dropped: %v", err))
			st.previous = nil
		} else {
			st.previousPEM = s.Data[SecretPreviousCert]
		}
	}
	st.nextPublished = annotationTime(s, AnnotationNextPublished)
	st.previousRetire = annotationTime(s, AnnotationPreviousRetire)
	if st.previous != nil && st.previousRetire.IsZero() {
		// Unknown retirement: keep it as long as it is valid.
		st.previousRetire = st.previous.NotAfter
	}
	return st, notes, nil
}

// apply writes the state into the Secret.
func (st caState) apply(s *corev1.Secret) {
	s.Data = map[string][]byte{SecretCACert: st.active.CertPEM, SecretCAKey: st.active.KeyPEM}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	delete(s.Annotations, AnnotationNextPublished)
	delete(s.Annotations, AnnotationPreviousRetire)
	if st.next != nil {
		s.Data[SecretNextCert], s.Data[SecretNextKey] = st.next.CertPEM, st.next.KeyPEM
		if !st.nextPublished.IsZero() {
			s.Annotations[AnnotationNextPublished] = st.nextPublished.UTC().Format(time.RFC3339Nano)
		}
	}
	if st.previous != nil {
		s.Data[SecretPreviousCert] = st.previousPEM
		s.Annotations[AnnotationPreviousRetire] = st.previousRetire.UTC().Format(time.RFC3339Nano)
	}
}

// bundle is the caBundle the state asks for: every CA still valid at now,
// previous first.
func (st caState) bundle(now time.Time) []byte {
	var pems [][]byte
	if st.previous != nil && ValidAt(st.previous, now) == nil {
		pems = append(pems, st.previousPEM)
	}
	pems = append(pems, st.active.CertPEM)
	if st.next != nil {
		pems = append(pems, st.next.CertPEM)
	}
	return concat(pems...)
}

func annotationTime(s *corev1.Secret, key string) time.Time {
	v, ok := s.Annotations[key]
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}
	}
	return t
}
