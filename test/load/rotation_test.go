//go:build load

package load

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/mandate-dev/mandate/certs"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/webhook"
)

// Rotation-under-load parameters: targetRate creates per second are
// offered from loadWorkers clients; the rate reached is reported, not
// asserted (a busy machine reaches less); no create may fail.
const (
	targetRate  = 260
	loadWorkers = 48
)

// offsetClock is the real time plus an offset the test moves forward, so
// that the rotator reaches its renewal points in seconds. Every certificate
// is backdated by certs.Backdate (an hour), so one issued at a clock a few
// minutes ahead is already valid for the real API server.
type offsetClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *offsetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *offsetClock) Set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = d
}

// servedCert is the leaf certificate mandate serve presents now.
func servedCert(addr string) (*x509.Certificate, error) {
	d := &net.Dialer{Timeout: 2 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reads the leaf only
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// waitServed waits until mandate serve presents the certificate in dir,
// and returns how long its certificate watcher took.
func waitServed(t *testing.T, addr, dir string) (*x509.Certificate, time.Duration) {
	t.Helper()
	want, err := certs.ReadFiles(dir)
	require.NoError(t, err)
	start := time.Now()
	for {
		got, err := servedCert(addr)
		if err == nil && got.Equal(want.Cert) {
			return got, time.Since(start)
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("mandate serve still presents another certificate 20s after the files were replaced (last error %v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func caBundles(t *testing.T, h *harness) [][]*x509.Certificate {
	t.Helper()
	ctx := context.Background()
	var m admissionregistrationv1.MutatingWebhookConfiguration
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, h.env.Client.Get(ctx, types.NamespacedName{Name: webhook.ConfigurationName}, &m))
	require.NoError(t, h.env.Client.Get(ctx, types.NamespacedName{Name: webhook.ConfigurationName}, &v))
	var out [][]*x509.Certificate
	for _, b := range [][]byte{m.Webhooks[0].ClientConfig.CABundle, v.Webhooks[0].ClientConfig.CABundle, v.Webhooks[1].ClientConfig.CABundle} {
		cas, err := certs.ParseBundle(b)
		require.NoError(t, err)
		out = append(out, cas)
	}
	return out
}

// TestRotationUnderLoad is the acceptance test of certificate rotation:
// mandate serve runs as its own process, its certificate directory managed
// by the certs rotator (the code of certs.mode selfSigned) on a clock the
// test moves forward, so the renewal points come within seconds. While at
// least 200 pod creates per second go through the real API server and
// Mandate's webhooks (failurePolicy Fail), the serving certificate files
// are replaced three times: a renewal under the same CA; a CA rotation
// (the new CA first joins the caBundle of both configurations, old+new,
// then signs the next serving certificate); a renewal under the new CA.
// Then the old CA leaves the caBundle. No create may fail.
func TestRotationUnderLoad(t *testing.T) {
	h := start(t)
	ctx := ctrl.LoggerInto(context.Background(), testr.New(t))
	hooks := h.env.Environment.WebhookInstallOptions
	servingAddr := net.JoinHostPort(hooks.LocalServingHost, strconv.Itoa(hooks.LocalServingPort))
	require.NoError(t, h.env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mandate-system"}}))

	clk := &offsetClock{}
	rot, err := certs.New(certs.Options{
		Client: h.env.Client, Namespace: "mandate-system", SecretName: "mandate-webhook-ca",
		WebhookConfigurationName: webhook.ConfigurationName, Hosts: []string{hooks.LocalServingHost},
		CertDir: hooks.LocalServingCertDir,
		// Minutes instead of a year and 30 days: serving certificates live
		// 3 minutes and are renewed after 2, the CA lives 8 and is renewed
		// after 4, and a new CA is 10s in the caBundle before it signs (the
		// test also waits 2s of real time for the API server).
		CADuration: 8 * time.Minute, CARenewBefore: 4 * time.Minute,
		ServingDuration: 3 * time.Minute, ServingRenewBefore: time.Minute,
		PropagationDelay: 10 * time.Second, CheckInterval: time.Hour, Clock: clk.Now,
	})
	require.NoError(t, err)

	// Take over from envtest's certificate before the load starts: this
	// first switch has no overlap (envtest's CA key is not kept).
	_, err = rot.Sync(ctx)
	require.NoError(t, err)
	waitServed(t, servingAddr, hooks.LocalServingCertDir)
	deadline := time.Now().Add(envtest.Timeout(30 * time.Second))
	for {
		err := h.create(ctx, gpuPod("team-0", "rotation-probe", "build"), true)
		if err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "the API server never trusted the new CA: %v", err)
		time.Sleep(100 * time.Millisecond)
	}
	bs := caBundles(t, h)
	require.Len(t, bs[0], 1)
	firstCA := bs[0][0]

	stop := make(chan struct{})
	load := h.steadyLoad("rotation", "build", targetRate, loadWorkers, stop)
	pause := func() { time.Sleep(1500 * time.Millisecond) }
	var (
		rotations     int
		fromNewCA     int
		reloads       []time.Duration
		servedSerials = map[string]bool{}
	)
	step := func(name string, offset time.Duration) *x509.Certificate {
		clk.Set(offset)
		_, err := rot.Sync(ctx)
		require.NoError(t, err, name)
		served, took := waitServed(t, servingAddr, hooks.LocalServingCertDir)
		if !servedSerials[served.SerialNumber.String()] {
			servedSerials[served.SerialNumber.String()] = true
			rotations++
			reloads = append(reloads, took)
		}
		t.Logf("%s (clock +%s): caBundle %d CA(s), serving certificate #%s by %s", name, offset,
			len(caBundles(t, h)[0]), served.SerialNumber.Text(16)[:8], served.Issuer.CommonName)
		return served
	}
	servedSerials[mustServed(t, servingAddr).SerialNumber.String()] = true

	pause()
	s1 := step("serving renewal under the same CA", 150*time.Second)
	require.NoError(t, s1.CheckSignatureFrom(firstCA))
	pause()
	step("CA due: the next CA joins the caBundle", 245*time.Second)
	for _, b := range caBundles(t, h) {
		require.Len(t, b, 2, "old + new CA in every webhook's caBundle")
		require.True(t, b[0].Equal(firstCA))
	}
	newCA := caBundles(t, h)[0][1]
	require.NoError(t, mustServed(t, servingAddr).CheckSignatureFrom(firstCA), "the new CA signs nothing yet")
	time.Sleep(2 * time.Second) // the API servers' webhook informers pick up the caBundle
	s2 := step("propagation delay over: serving certificate from the new CA", 262*time.Second)
	require.NoError(t, s2.CheckSignatureFrom(newCA), "overlap case: a certificate from the new CA while the caBundle is old+new")
	fromNewCA++
	for _, b := range caBundles(t, h) {
		require.Len(t, b, 2, "the old CA stays while certificates it signed are valid")
	}
	pause()
	s3 := step("serving renewal under the new CA", 390*time.Second)
	require.NoError(t, s3.CheckSignatureFrom(newCA))
	pause()
	s4 := step("old CA retired from the caBundle", 458*time.Second)
	require.True(t, s4.Equal(s3), "the serving certificate stays")
	for _, b := range caBundles(t, h) {
		require.Len(t, b, 1, "only the new CA once no certificate of the old one is valid")
		require.True(t, b[0].Equal(newCA))
	}
	pause()
	close(stop)
	sum := summarize(load.wait())
	ok, failed := sum.ok, sum.failed
	rate := sum.rate
	p50, p99, n, err := h.latencyPercentiles()
	require.NoError(t, err)
	fmt.Printf("rotation: %d pod creates in %s (%.0f/s, target %d/s, %d clients), %d failed; %d serving certificate rotations (%d from a new CA while the caBundle held old+new), reloaded within %v\n",
		ok+failed, sum.elapsed.Round(time.Millisecond), rate, targetRate, loadWorkers, failed, rotations, fromNewCA, reloads)
	fmt.Printf("rotation: client create latency p50 %s, p99 %s; webhook /mutate latency (%d admissions) p50 %s, p99 %s\n",
		percentile(sum.latencies, 0.5).Round(10*time.Microsecond), percentile(sum.latencies, 0.99).Round(10*time.Microsecond),
		n, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond))
	require.Zero(t, failed, "no create may fail during rotation; first errors: %v", sum.errs)
	require.GreaterOrEqual(t, rotations, 3, "the serving certificate files were replaced at least three times")
	require.Equal(t, 1, fromNewCA)
}

func mustServed(t *testing.T, addr string) *x509.Certificate {
	t.Helper()
	c, err := servedCert(addr)
	require.NoError(t, err)
	return c
}
