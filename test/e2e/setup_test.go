package e2e

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/cmd/mandate/app"
	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/decisionlog"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/test/l4proxy"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/webhook"
	"github.com/mandate-dev/mandate/workload"
)

// mandateNamespace is Mandate's own namespace in the tests.
const mandateNamespace = "mandate-system"

// suite is one API server with Mandate's webhooks registered and served.
type suite struct {
	env *envtest.Env
	// srv is the first (or only) replica.
	srv        *app.Server
	healthAddr string
	// replicas are every replica serving the webhooks, srv first; proxy
	// spreads the API server's calls over them (nil with one replica).
	replicas []*app.Server
	proxy    *l4proxy.RoundRobin
	// backends are the replicas' webhook addresses, in replicas' order
	// (nil with one replica).
	backends []string
	// shared: the replicas keep their reservations in the shared ledger.
	shared bool
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start runs the API server with the webhook configurations registered and
// Mandate's manager serving them, and waits until /readyz answers 200.
// start runs the API server and mandate serve in-process, with the given
// extra controllers (controller names are process-wide, so at most one test
// per binary may add the gang controller).
func start(t *testing.T) *suite {
	t.Helper()
	return startWith(t, startOptions{})
}

// startOptions adjust startWith: extra API server options (flags) and a
// change to the webhook server's options (e.g. a bundle source).
type startOptions struct {
	env []envtest.Option
	// config changes serve's configuration (e.g. a bundle source).
	config func(*config.Serve)
	// prepare, when set, runs once Mandate's namespace exists, before
	// serve starts (e.g. a Lease another replica holds).
	prepare func(t *testing.T, env *envtest.Env)
	// decisions writes the decision log; nil writes none.
	decisions *decisionlog.Logger
	// replicas, when more than 1, runs that many replicas as the chart
	// does (shared quota ledger, the API server's client certificate
	// required, one Lease for each elected loop), each on its own port
	// behind a round-robin TCP proxy on the registered webhook address.
	replicas int
	// shared keeps one replica's reservations in the shared ledger
	// (TenantLedger objects), as the chart's quota.shared does; more than
	// one replica always does.
	shared bool
	// apiServers, when more than 1, starts that many API servers on the
	// same etcd (a highly available control plane): the suite's client
	// then sends its writes to each in turn, so every one calls the
	// webhook (each over its own connection, so each reaches a replica of
	// its own behind the proxy).
	apiServers int
}

// ledgerSetup is one way the door's quota decisions are kept: in one
// replica's memory, in the shared ledger of one replica, or in the shared
// ledger of three replicas behind two API servers (the chart's ledger,
// scaled out, under a highly available control plane).
type ledgerSetup struct {
	name       string
	replicas   int
	shared     bool
	apiServers int
}

// ledgerSetups are the setups every quota test of the door passes in.
var ledgerSetups = []ledgerSetup{
	{name: "memory"},
	{name: "shared-1-replica", shared: true},
	{name: "shared-3-replicas-2-apiservers", replicas: 3, shared: true, apiServers: 2},
}

// forEachLedger runs test once per ledgerSetup, as a subtest named after
// it, with startOptions that start that setup (more may be added).
func forEachLedger(t *testing.T, test func(t *testing.T, so startOptions)) {
	for _, l := range ledgerSetups {
		t.Run(l.name, func(t *testing.T) {
			test(t, startOptions{replicas: l.replicas, shared: l.shared, apiServers: l.apiServers})
		})
	}
}

// startWith is start with startOptions.
func startWith(t *testing.T, so startOptions) *suite {
	t.Helper()
	log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctrl.SetLogger(log)

	port := freePort(t)
	var proxy *l4proxy.RoundRobin
	var timeout int32 // the default
	if so.replicas > 1 {
		proxy = l4proxy.Listen(t)
		port = proxy.Port()
		so.env = append(so.env, envtest.WithWebhookClientCert())
	}
	if so.replicas > 1 || so.shared {
		// A commit through the shared ledger waits for the other
		// replica's write: on a busy machine that outlasts the default
		// 3 s, and the API server fails the create (failurePolicy Fail).
		timeout = int32(min(envtest.Timeout(10*time.Second), 30*time.Second) / time.Second)
	}
	mutating, validating := webhook.Configurations(webhook.RegistrationOptions{
		TimeoutSeconds: timeout,
		// envtest fills in the CA bundle of the serving certificate it
		// generates for 127.0.0.1.
		URL:       fmt.Sprintf("https://127.0.0.1:%d", port),
		Namespace: mandateNamespace,
		// Every namespace, not only the tenant-labelled ones (the
		// default): the suite checks that a workload of a namespace
		// without a tenant is denied (TENANT_MISSING). test/chart checks
		// the default.
		NamespaceSelector: &metav1.LabelSelector{},
	})
	env := envtest.Start(t, append([]envtest.Option{envtest.WithPyTorchJobCRD(), envtest.WithWebhooks(crenvtest.WebhookInstallOptions{
		MutatingWebhooks:   []*admissionregistrationv1.MutatingWebhookConfiguration{mutating},
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{validating},
		LocalServingHost:   "127.0.0.1",
		LocalServingPort:   port,
	})}, so.env...)...)
	wio := env.Environment.WebhookInstallOptions
	if so.apiServers > 1 {
		alternating := &alternatingClient{Client: env.Client}
		for range so.apiServers - 1 {
			_, other := env.StartSecondAPIServer(t)
			alternating.others = append(alternating.others, other)
		}
		env.Client = alternating
	}

	s := &suite{env: env, proxy: proxy, shared: so.shared || so.replicas > 1}
	// Mandate's namespace, as an install has it: the Leases of the elected
	// loops (authority metrics, scheduler sync) live there.
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mandateNamespace}}); err != nil {
		t.Fatalf("unable to create namespace %s: %v", mandateNamespace, err)
	}
	if so.prepare != nil {
		so.prepare(t, env)
	}
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), log))
	t.Cleanup(cancel)
	n := max(so.replicas, 1)
	var backends []string
	for range n {
		c := config.Default()
		c.Webhook = config.Webhook{CertDir: wio.LocalServingCertDir, Host: wio.LocalServingHost, Port: wio.LocalServingPort}
		healthAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		c.HealthAddr, c.MetricsAddr, c.Namespace = healthAddr, "0", mandateNamespace
		if proxy != nil {
			// What the chart's values set: the shared ledger, and only
			// the API server may call.
			c.Webhook.Port = freePort(t)
			c.Quota.Shared = true
			c.Webhook.ClientCAFile = writeClientCA(t, env)
			c.Webhook.ClientCN = envtest.WebhookClientCN
			backends = append(backends, net.JoinHostPort(c.Webhook.Host, fmt.Sprint(c.Webhook.Port)))
		}
		if so.shared {
			c.Quota.Shared = true
		}
		if so.config != nil {
			so.config(&c)
		}
		srv, err := app.New(ctx, env.Config, c, so.decisions)
		if err != nil {
			t.Fatalf("app.New: %v", err)
		}
		if s.srv == nil {
			s.srv, s.healthAddr = srv, healthAddr
		}
		s.replicas = append(s.replicas, srv)
		done := make(chan error, 1)
		go func() { done <- srv.Start(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("webhook server: %v", err)
			}
		})
		envtest.WaitFor(t, 30*time.Second, "/readyz to answer 200", func() bool { return probe(healthAddr, "/readyz") == http.StatusOK })
	}
	if proxy != nil {
		s.backends = backends
		proxy.Serve(backends)
	}
	return s
}

// writeClientCA writes the CA that signs the API server's webhook client
// certificate into a file serve reads (--client-ca-file).
func writeClientCA(t *testing.T, env *envtest.Env) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "client-ca.crt")
	if err := os.WriteFile(path, env.WebhookClientCA.CertPEM, 0o600); err != nil {
		t.Fatalf("unable to write the webhook client CA: %v", err)
	}
	return path
}

// probe GETs a health endpoint and returns the status (0 when unreachable).
func (s *suite) probe(path string) int { return probe(s.healthAddr, path) }

// probe GETs path of the health address addr and returns the status (0
// when unreachable).
func probe(addr, path string) int {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// populate creates 8 GPU nodes (one leaf block) and the tenant namespaces,
// and waits until Mandate's cluster state holds them.
func (s *suite) populate(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	c := s.env.Client
	const nodes = testClusterNodes
	for i := range nodes {
		if err := fixtures.CreateNode(ctx, c, fixtures.GPUNode(i)); err != nil {
			t.Fatal(err)
		}
	}
	// The API server's Priority admission resolves pods' priority classes:
	// create the tiers of the default model, as KAI ships them.
	if err := fixtures.CreatePriorityClasses(ctx, c); err != nil {
		t.Fatal(err)
	}
	tenants := fixtures.Tenants()
	for ns, tenant := range tenants {
		if err := c.Create(ctx, fixtures.TenantNamespace(ns, tenant)); err != nil {
			t.Fatalf("create namespace %s: %v", ns, err)
		}
	}
	envtest.WaitFor(t, 20*time.Second, "every replica's cluster state to see the nodes and namespaces", func() bool {
		for _, r := range s.replicas {
			fit, err := r.State.Snapshot().Place(topology.Request{Pods: nodes, GPUsPerPod: 8, Resource: "nvidia.com/gpu", RequiredLevel: "block"})
			if err != nil || !fit.FitsNow {
				return false
			}
			for ns, tenant := range tenants {
				if r.State.Namespace(ns).Labels[workload.LabelTenant] != tenant {
					return false
				}
			}
		}
		return true
	})
}

// object parses a YAML manifest.
func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return obj
}
