package certs_test

import (
	"context"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/mandate-dev/mandate/certs"
	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/webhook"
)

const (
	namespace  = "mandate-system"
	secretName = "mandate-ca"
)

var hosts = []string{"mandate.mandate-system.svc", "mandate.mandate-system.svc.cluster.local"}

// clock is a settable test clock.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time        { return c.now }
func (c *clock) Add(d time.Duration)   { c.now = c.now.Add(d) }
func newClock() *clock                 { return &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }
func ctx(t *testing.T) context.Context { return t.Context() }
func (c *clock) String() string        { return c.now.Format(time.RFC3339) }
func configurations() []client.Object {
	m, v := webhook.Configurations(webhook.RegistrationOptions{Service: &webhook.ServiceReference{Namespace: namespace, Name: "mandate", Port: 443}, Namespace: namespace})
	return []client.Object{m, v}
}
func fakeClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(configurations()...).Build()
}

func newRotator(t *testing.T, c client.Client, clk *clock, dir string, mod ...func(*certs.Options)) *certs.Rotator {
	t.Helper()
	o := certs.Options{Client: c, Namespace: namespace, SecretName: secretName, WebhookConfigurationName: webhook.ConfigurationName,
		Hosts: hosts, CertDir: dir, Clock: clk.Now}
	for _, m := range mod {
		m(&o)
	}
	r, err := certs.New(o)
	require.NoError(t, err)
	return r
}

// bundles returns the caBundle of every webhook of both configurations.
func bundles(t *testing.T, c client.Client) [][]byte {
	t.Helper()
	var m admissionregistrationv1.MutatingWebhookConfiguration
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, c.Get(ctx(t), types.NamespacedName{Name: webhook.ConfigurationName}, &m))
	require.NoError(t, c.Get(ctx(t), types.NamespacedName{Name: webhook.ConfigurationName}, &v))
	var out [][]byte
	for _, w := range m.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	for _, w := range v.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

// trusted says whether the API server, holding caBundle, accepts serving.
func trusted(serving *x509.Certificate, caBundle []byte, now time.Time) error {
	cas, err := certs.ParseBundle(caBundle)
	if err != nil {
		return err
	}
	var errs []error
	for _, ca := range cas {
		if err := certs.Verify(serving, ca, hosts, now); err == nil {
			return nil
		} else {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, errors.New("no CA of the caBundle verifies it"))...)
}

func serial(c *x509.Certificate) string { return c.SerialNumber.String() }

// TestRotationSchedule runs the defaults (CA 1 year, serving 30 days, each
// renewed at 2/3 of its life, 1 minute propagation) for three years of daily
// checks (and every check the rotator asks for), and checks after every step what the API server would
// see: both configurations carry the same caBundle; it trusts the serving
// certificate now on disk AND the one before it (which the server may still
// present until it reloads); no certificate on disk is ever expired or not
// yet valid; a new CA is in the caBundle for the propagation delay before it
// signs anything; an old CA leaves the caBundle only once every serving
// certificate it signed has expired.
func TestRotationSchedule(t *testing.T) {
	c, clk, dir := fakeClient(t), newClock(), t.TempDir()
	step := 24 * time.Hour
	r := newRotator(t, c, clk, dir, func(o *certs.Options) { o.CheckInterval = step })
	start := clk.now

	var (
		prevServing   *x509.Certificate
		servingRenews int
		caRotations   int
		// lastExpiry of the serving certificates each CA signed.
		lastExpiry  = map[string]time.Time{}
		inBundle    = map[string]time.Time{} // CA serial → when it joined the caBundle
		removed     = map[string]bool{}
		caFirstSign = map[string]time.Time{}
		maxCAs      int
	)
	for clk.now.Before(start.Add(3 * 365 * 24 * time.Hour)) {
		wait, err := r.Sync(ctx(t))
		require.NoError(t, err, "at %s", clk)
		require.Positive(t, wait)

		bs := bundles(t, c)
		require.Len(t, bs, 4, "four webhooks: mutate, validate, namespaces and evictions")
		for _, b := range bs[1:] {
			require.Equal(t, string(bs[0]), string(b), "every webhook carries the same caBundle at %s", clk)
		}
		cas, err := certs.ParseBundle(bs[0])
		require.NoError(t, err)
		maxCAs = max(maxCAs, len(cas))
		present := map[string]bool{}
		for _, ca := range cas {
			present[serial(ca)] = true
			if _, ok := inBundle[serial(ca)]; !ok {
				inBundle[serial(ca)] = clk.now
			}
			require.NoError(t, certs.ValidAt(ca, clk.now), "a CA in the caBundle is valid at %s", clk)
		}
		for s := range inBundle {
			if !present[s] && !removed[s] {
				removed[s] = true
				require.False(t, clk.now.Before(lastExpiry[s]),
					"CA %s left the caBundle at %s while a serving certificate it signed is valid until %s", s, clk, lastExpiry[s])
			}
		}

		kp, err := certs.ReadFiles(dir)
		require.NoError(t, err)
		require.NoError(t, certs.ValidAt(kp.Cert, clk.now), "the serving certificate on disk at %s", clk)
		require.NoError(t, trusted(kp.Cert, bs[0], clk.now), "the caBundle trusts the serving certificate on disk at %s", clk)
		if prevServing != nil && certs.ValidAt(prevServing, clk.now) == nil {
			require.NoError(t, trusted(prevServing, bs[0], clk.now), "the caBundle still trusts the previous serving certificate at %s (overlap)", clk)
		}
		if prevServing == nil || serial(prevServing) != serial(kp.Cert) {
			if prevServing != nil {
				servingRenews++
				require.False(t, clk.now.Before(prevServing.NotAfter.Add(-10*24*time.Hour)) && prevServing.Issuer.String() == kp.Cert.Issuer.String() &&
					string(prevServing.AuthorityKeyId) == string(kp.Cert.AuthorityKeyId),
					"a serving certificate under an unchanged CA is renewed only when due, at %s", clk)
			}
			ca := issuer(t, kp.Cert, cas)
			if _, ok := caFirstSign[serial(ca)]; !ok {
				caFirstSign[serial(ca)] = clk.now
				if len(caFirstSign) > 1 {
					caRotations++
					require.GreaterOrEqual(t, clk.now.Sub(inBundle[serial(ca)]), time.Minute,
						"a new CA signs only after the propagation delay in the caBundle")
				}
			}
			lastExpiry[serial(ca)] = laterOf(lastExpiry[serial(ca)], kp.Cert.NotAfter)
			prevServing = kp.Cert
		}
		clk.Add(wait)
	}
	require.GreaterOrEqual(t, caRotations, 2, "three years with a one-year CA rotate it at least twice")
	require.GreaterOrEqual(t, servingRenews, 50, "serving renewed every 20 days")
	require.Equal(t, 2, maxCAs, "at most the old and the new CA together")
	t.Logf("3 years: %d serving renewals, %d CA rotations, at most %d CAs in the caBundle", servingRenews, caRotations, maxCAs)
}

func issuer(t *testing.T, serving *x509.Certificate, cas []*x509.Certificate) *x509.Certificate {
	t.Helper()
	for _, ca := range cas {
		if serving.CheckSignatureFrom(ca) == nil {
			return ca
		}
	}
	t.Fatalf("no CA in the caBundle signed the serving certificate")
	return nil
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// TestOverlapSteps walks one CA rotation step by step.
func TestOverlapSteps(t *testing.T) {
	c, clk, dir := fakeClient(t), newClock(), t.TempDir()
	r := newRotator(t, c, clk, dir)
	_, err := r.Sync(ctx(t))
	require.NoError(t, err)
	first, err := certs.ReadFiles(dir)
	require.NoError(t, err)
	cas := caBundle(t, c)
	require.Len(t, cas, 1)
	oldCA := cas[0]

	// Just before the CA is due (8 months in), only serving renewals.
	clk.now = oldCA.NotAfter.Add(-config.DefaultCARenewBefore - time.Hour)
	_, err = r.Sync(ctx(t))
	require.NoError(t, err)
	require.Len(t, caBundle(t, c), 1)

	// Due: the next CA joins the caBundle; the serving certificate stays.
	clk.Add(2 * time.Hour)
	before, err := certs.ReadFiles(dir)
	require.NoError(t, err)
	wait, err := r.Sync(ctx(t))
	require.NoError(t, err)
	cas = caBundle(t, c)
	require.Len(t, cas, 2, "old + new CA during the rotation")
	require.True(t, cas[0].Equal(oldCA))
	newCA := cas[1]
	during, err := certs.ReadFiles(dir)
	require.NoError(t, err)
	require.Equal(t, serial(before.Cert), serial(during.Cert), "the new CA signs nothing before the propagation delay")
	require.LessOrEqual(t, wait, config.DefaultPropagationDelay, "the next check comes at the end of the propagation delay")
	var s corev1.Secret
	require.NoError(t, c.Get(ctx(t), types.NamespacedName{Namespace: namespace, Name: secretName}, &s))
	require.Contains(t, s.Annotations, certs.AnnotationNextPublished)

	// Half the delay: still the old CA signs.
	clk.Add(config.DefaultPropagationDelay / 2)
	_, err = r.Sync(ctx(t))
	require.NoError(t, err)
	kp, err := certs.ReadFiles(dir)
	require.NoError(t, err)
	require.Equal(t, serial(before.Cert), serial(kp.Cert))

	// After the delay: the new CA is active and signs a new serving
	// certificate; the old CA stays.
	clk.Add(config.DefaultPropagationDelay)
	activated := clk.now
	_, err = r.Sync(ctx(t))
	require.NoError(t, err)
	kp, err = certs.ReadFiles(dir)
	require.NoError(t, err)
	require.NoError(t, kp.Cert.CheckSignatureFrom(newCA), "the serving certificate is signed by the new CA")
	require.Len(t, caBundle(t, c), 2, "the old CA stays while certificates it signed are valid")
	require.NoError(t, certs.ValidAt(before.Cert, clk.now), "the previous serving certificate is still valid…")
	require.NoError(t, trusted(before.Cert, bundles(t, c)[0], clk.now), "…and still trusted")

	// Just before every old-CA certificate has expired: still both.
	clk.now = activated.Add(config.DefaultServingDuration)
	_, err = r.Sync(ctx(t))
	require.NoError(t, err)
	require.Len(t, caBundle(t, c), 2)
	// After the serving lifetime plus the propagation delay: the old CA goes.
	clk.now = activated.Add(config.DefaultServingDuration + config.DefaultPropagationDelay)
	_, err = r.Sync(ctx(t))
	require.NoError(t, err)
	cas = caBundle(t, c)
	require.Len(t, cas, 1)
	require.True(t, cas[0].Equal(newCA))
	require.Error(t, certs.ValidAt(before.Cert, clk.now), "no certificate the old CA signed is valid any more")
	require.NotEqual(t, serial(first.Cert), serial(kp.Cert))
}

func caBundle(t *testing.T, c client.Client) []*x509.Certificate {
	t.Helper()
	cas, err := certs.ParseBundle(bundles(t, c)[0])
	require.NoError(t, err)
	return cas
}

// TestRepublishRestartsDelay: a caBundle reset while the next CA waits
// (a manual edit, a re-apply) makes it wait the propagation delay again.
func TestRepublishRestartsDelay(t *testing.T) {
	c, clk, dir := fakeClient(t), newClock(), t.TempDir()
	r := newRotator(t, c, clk, dir)
	_, err := r.Sync(ctx(t))
	require.NoError(t, err)
	oldCA := caBundle(t, c)[0]
	clk.now = oldCA.NotAfter.Add(-config.DefaultCARenewBefore)
	_, err = r.Sync(ctx(t))
	require.NoError(t, err)
	require.Len(t, caBundle(t, c), 2)
	before, err := certs.ReadFiles(dir)
	require.NoError(t, err)

	// Reset the validating configuration's caBundle to the old CA only.
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, c.Get(ctx(t), types.NamespacedName{Name: webhook.ConfigurationName}, &v))
	for i := range v.Webhooks {
		v.Webhooks[i].ClientConfig.CABundle = oldCA.Raw
	}
	require.NoError(t, c.Update(ctx(t), &v))

	clk.Add(config.DefaultPropagationDelay + time.Second)
	_, err = r.Sync(ctx(t))
	require.NoError(t, err)
	require.Len(t, caBundle(t, c), 2, "repaired")
	kp, err := certs.ReadFiles(dir)
	require.NoError(t, err)
	require.Equal(t, serial(before.Cert), serial(kp.Cert), "not activated right after the repair")

	clk.Add(config.DefaultPropagationDelay)
	_, err = r.Sync(ctx(t))
	require.NoError(t, err)
	kp, err = certs.ReadFiles(dir)
	require.NoError(t, err)
	require.NotEqual(t, serial(before.Cert), serial(kp.Cert), "activated one delay after the repair")
}

// TestExpiredCAReplaced: after a long outage the CA in the Secret has
// expired; it is replaced and a valid serving certificate written, never
// an expired one.
func TestExpiredCAReplaced(t *testing.T) {
	c, clk, dir := fakeClient(t), newClock(), t.TempDir()
	r := newRotator(t, c, clk, dir)
	_, err := r.Sync(ctx(t))
	require.NoError(t, err)
	clk.Add(2 * config.DefaultCADuration)
	_, err = r.Sync(ctx(t))
	require.NoError(t, err)
	cas := caBundle(t, c)
	require.Len(t, cas, 1)
	require.NoError(t, certs.ValidAt(cas[0], clk.now))
	kp, err := certs.ReadFiles(dir)
	require.NoError(t, err)
	require.NoError(t, certs.Verify(kp.Cert, cas[0], hosts, clk.now))
}

// TestBrokenFilesReplaced: an unreadable, mismatched or foreign serving
// certificate is replaced by one from the active CA.
func TestBrokenFilesReplaced(t *testing.T) {
	foreignCA, err := certs.NewCA("other", time.Now(), time.Hour*24*365)
	require.NoError(t, err)
	foreign, err := certs.IssueServing(foreignCA, hosts, time.Now(), 24*time.Hour)
	require.NoError(t, err)
	otherHosts, err := certs.IssueServing(foreignCA, []string{"elsewhere.svc"}, time.Now(), 24*time.Hour)
	require.NoError(t, err)
	for _, tc := range []struct {
		name      string
		cert, key []byte
	}{
		{"garbage", []byte("not pem"), []byte("not pem")},
		{"mismatched key", foreign.CertPEM, foreignCA.KeyPEM},
		{"signed by another CA", foreign.CertPEM, foreign.KeyPEM},
		{"other hosts", otherHosts.CertPEM, otherHosts.KeyPEM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, dir := fakeClient(t), t.TempDir()
			clk := &clock{now: time.Now()}
			require.NoError(t, os.WriteFile(filepath.Join(dir, certs.CertFile), tc.cert, 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(dir, certs.KeyFile), tc.key, 0o600))
			r := newRotator(t, c, clk, dir)
			_, err := r.Sync(ctx(t))
			require.NoError(t, err)
			kp, err := certs.ReadFiles(dir)
			require.NoError(t, err)
			require.NoError(t, certs.Verify(kp.Cert, caBundle(t, c)[0], hosts, clk.now))
		})
	}
}

// TestReplicasShareCA: two replicas on one API server use one CA, each
// with its own serving certificate, and the caBundle holds it once.
func TestReplicasShareCA(t *testing.T) {
	c, clk := fakeClient(t), newClock()
	a, b := t.TempDir(), t.TempDir()
	for _, dir := range []string{a, b} {
		_, err := newRotator(t, c, clk, dir).Sync(ctx(t))
		require.NoError(t, err)
	}
	cas := caBundle(t, c)
	require.Len(t, cas, 1)
	ka, err := certs.ReadFiles(a)
	require.NoError(t, err)
	kb, err := certs.ReadFiles(b)
	require.NoError(t, err)
	require.NotEqual(t, serial(ka.Cert), serial(kb.Cert))
	require.NoError(t, certs.Verify(ka.Cert, cas[0], hosts, clk.now))
	require.NoError(t, certs.Verify(kb.Cert, cas[0], hosts, clk.now))
}

func TestMissingConfiguration(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	_, err := newRotator(t, c, newClock(), t.TempDir()).Sync(ctx(t))
	require.ErrorContains(t, err, "MutatingWebhookConfiguration mandate")
}
