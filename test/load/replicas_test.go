//go:build load

package load

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"

	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/webhook"
)

// hostIP is an address of this machine that an EndpointSlice may hold:
// loopback addresses may not.
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	t.Fatalf("no non-loopback IPv4 address on this machine for the replicas' endpoints (addresses: %v)", addrs)
	return ""
}

// startReplicas registers Mandate as a Service, as the chart does, and runs
// two mandate serve replicas behind it, each on its own port and in its own
// EndpointSlice. The API server routes each call to a random ready
// endpoint of the Service (--enable-aggregator-routing: it picks the
// endpoint itself rather than relying on kube-proxy); the test writes the
// slices' ready conditions, standing in for the EndpointSlice controller.
func startReplicas(t *testing.T) ([2]*harness, func(ready [2]bool)) {
	t.Helper()
	ctx := context.Background()
	env := envtest.Start(t, envtest.WithAPIServerArg("enable-aggregator-routing", "true"))
	c := env.Client
	ip := hostIP(t)

	const service = "mandate"
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(service+"."+mandateNamespace+".svc", nil, nil)
	require.NoError(t, err)
	certDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(certDir, "tls.crt"), certPEM, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(certDir, "tls.key"), keyPEM, 0o600))

	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mandateNamespace}}))
	require.NoError(t, c.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: mandateNamespace, Name: service},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromString("webhook")}}},
	}))
	var (
		ports  [2]int
		slices [2]*discoveryv1.EndpointSlice
	)
	for i := range slices {
		_, p, err := net.SplitHostPort(freeAddr(t))
		require.NoError(t, err)
		ports[i], err = strconv.Atoi(p)
		require.NoError(t, err)
		slices[i] = &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: mandateNamespace, Name: fmt.Sprintf("%s-replica-%d", service, i),
				Labels: map[string]string{discoveryv1.LabelServiceName: service}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(ports[i])), Protocol: ptr.To(corev1.ProtocolTCP)}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}}},
		}
	}
	setReady := func(ready [2]bool) {
		for i, s := range slices {
			s.Endpoints[0].Conditions.Ready = ptr.To(ready[i])
			if s.ResourceVersion == "" {
				require.NoError(t, c.Create(ctx, s))
			} else {
				require.NoError(t, c.Update(ctx, s))
			}
		}
		// The API server reads EndpointSlices through an informer.
		time.Sleep(time.Second)
	}
	setReady([2]bool{true, true})

	mutating, validating := webhook.Configurations(webhook.RegistrationOptions{
		Service:   &webhook.ServiceReference{Namespace: mandateNamespace, Name: service, Port: 443},
		CABundle:  certPEM,
		Namespace: mandateNamespace,
	})
	require.NoError(t, c.Create(ctx, mutating))
	require.NoError(t, c.Create(ctx, validating))

	binary, kubeconfig, policies := buildMandate(t, env.RepoRoot), adminKubeconfig(t, env), loadPolicies(t)
	var replicas [2]*harness
	for i := range replicas {
		h := &harness{t: t, env: env, binary: binary, health: freeAddr(t), metrics: freeAddr(t)}
		h.args = []string{"serve", "--kubeconfig", kubeconfig, "--cert-dir", certDir,
			"--host", ip, "--port", strconv.Itoa(ports[i]), "--health-addr", h.health, "--metrics-addr", h.metrics,
			"--namespace", mandateNamespace, "--policies", policies}
		h.startServe()
		t.Cleanup(h.stopServe)
		replicas[i] = h
	}
	for _, h := range replicas {
		h.waitReady(60 * time.Second)
	}
	replicas[0].seed()
	return replicas, setReady
}

// createRound creates n pods across the tenants and returns how many were
// decided and the errors of the others.
func (h *harness) createRound(prefix string, n int) (decidedCount int, errs []error) {
	for i := range n {
		p, err := h.createPod(gpuPod(fmt.Sprintf("team-%d", i%tenants), fmt.Sprintf("%s-%03d", prefix, i), "train"))
		switch {
		case err != nil:
			errs = append(errs, err)
		case decided(p):
			decidedCount++
		default:
			errs = append(errs, fmt.Errorf("%s/%s admitted undecided", p.Namespace, p.Name))
		}
	}
	return decidedCount, errs
}

// mutateCount is how many creates a replica has admitted.
func (h *harness) mutateCount(t *testing.T) float64 {
	n, err := h.counter("mandate_admissions_total", `webhook="mutate"`, `outcome="allowed"`)
	require.NoError(t, err)
	return n
}

// TestFailureReplicaDown: two replicas behind one Service. The API server
// keeps a connection to one replica and sends it every call; when that
// replica dies, each new connection goes to a random ready endpoint, so
// creates fail (failurePolicy Fail, never admitted undecided) until the dead
// replica's endpoint is marked not ready, as the EndpointSlice controller
// does when its readiness probe fails. From then on the survivor decides
// every create, and the restarted replica takes over when the survivor
// goes in turn.
func TestFailureReplicaDown(t *testing.T) {
	replicas, setReady := startReplicas(t)
	const n = 40

	before := [2]float64{replicas[0].mutateCount(t), replicas[1].mutateCount(t)}
	got, errs := replicas[0].createRound("both", n)
	require.Empty(t, errs, "both replicas up")
	require.Equal(t, n, got)
	share := [2]float64{replicas[0].mutateCount(t) - before[0], replicas[1].mutateCount(t) - before[1]}
	fmt.Printf("failure: two replicas up: they decided %.0f and %.0f of %d creates\n", share[0], share[1], n)
	active := 0
	if share[1] > share[0] {
		active = 1
	}
	survivor := 1 - active

	replicas[active].kill()
	began := time.Now()
	got, errs = replicas[0].createRound("window", n)
	window := time.Since(began)
	// The API server routes each webhook call on its own, so either of
	// Mandate's webhooks may meet the dead replica.
	for _, err := range errs {
		require.Regexp(t, `failed calling webhook "(`+regexp.QuoteMeta(webhook.MutatingWebhookName)+`|`+
			regexp.QuoteMeta(webhook.ValidatingWebhookName)+`)"`, err.Error(),
			"a create routed to the dead replica fails, it is never admitted undecided")
	}
	require.Equal(t, n, got+len(errs))
	fmt.Printf("failure: busiest replica down, its endpoint still ready: %d of %d creates failed in %s, %d decided by the survivor\n",
		len(errs), n, window.Round(time.Millisecond), got)
	if len(errs) > 0 {
		fmt.Printf("failure: replica down: %v\n", errs[0])
	}

	ready := [2]bool{}
	ready[survivor] = true
	setReady(ready)
	got, errs = replicas[0].createRound("survivor", n)
	require.Empty(t, errs, "with the dead replica's endpoint not ready, the survivor decides every create")
	require.Equal(t, n, got)

	replicas[active].startServe()
	replicas[active].waitReady(30 * time.Second)
	setReady([2]bool{true, true})
	got, errs = replicas[0].createRound("back", n)
	require.Empty(t, errs, "both replicas up again")
	require.Equal(t, n, got)

	// The restarted replica serves: take the survivor away in turn.
	replicas[survivor].kill()
	ready = [2]bool{}
	ready[active] = true
	setReady(ready)
	restarted := replicas[active].mutateCount(t)
	got, errs = replicas[0].createRound("swapped", n)
	require.Empty(t, errs, "the restarted replica decides every create once the other is gone")
	require.Equal(t, n, got)
	require.Equal(t, float64(n), replicas[active].mutateCount(t)-restarted, "decided by the restarted replica")
	fmt.Printf("failure: replica restarted and ready: it decided all %d creates once the other was gone\n", n)
}
