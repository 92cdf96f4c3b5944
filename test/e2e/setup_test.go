package e2e

import (
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/webhook"
)

// mandateNamespace is Mandate's own namespace in the tests.
const mandateNamespace = "mandate-system"

// tenants maps the test namespaces to their tenants (default model):
// product schedules with KAI, research-* with Volcano.
var tenants = map[string]string{
	"platform": "platform",
	"product":  "product",
	"vision":   "research-vision",
	"llm":      "research-llm",
}

// suite is one API server with Mandate's webhooks registered and served.
type suite struct {
	env        *envtest.Env
	srv        *webhook.Server
	healthAddr string
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
func start(t *testing.T, setup ...func(manager.Manager) error) *suite {
	t.Helper()
	return startWith(t, nil, setup...)
}

// startWith is start with the webhook server's options edited first
// (e.g. a bundle source).
func startWith(t *testing.T, edit func(*webhook.Options), setup ...func(manager.Manager) error) *suite {
	t.Helper()
	log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctrl.SetLogger(log)

	port := freePort(t)
	mutating, validating := webhook.Configurations(webhook.RegistrationOptions{
		// envtest fills in the CA bundle of the serving certificate it
		// generates for 127.0.0.1.
		URL:       fmt.Sprintf("https://127.0.0.1:%d", port),
		Namespace: mandateNamespace,
	})
	env := envtest.Start(t, envtest.WithPyTorchJobCRD(), envtest.WithWebhooks(crenvtest.WebhookInstallOptions{
		MutatingWebhooks:   []*admissionregistrationv1.MutatingWebhookConfiguration{mutating},
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{validating},
		LocalServingHost:   "127.0.0.1",
		LocalServingPort:   port,
	}))
	wio := env.Environment.WebhookInstallOptions

	s := &suite{env: env, healthAddr: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), log))
	o := webhook.Options{
		RestConfig:  env.Config,
		CertDir:     wio.LocalServingCertDir,
		Host:        wio.LocalServingHost,
		Port:        wio.LocalServingPort,
		HealthAddr:  s.healthAddr,
		MetricsAddr: "0",
		Namespace:   mandateNamespace,
		Setup:       setup,
	}
	if edit != nil {
		edit(&o)
	}
	srv, err := webhook.New(ctx, o)
	if err != nil {
		cancel()
		t.Fatalf("webhook.New: %v", err)
	}
	s.srv = srv
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("webhook server: %v", err)
		}
	})
	waitFor(t, 30*time.Second, "/readyz to answer 200", func() bool { return s.probe("/readyz") == http.StatusOK })
	return s
}

// probe GETs a health endpoint and returns the status (0 when unreachable).
func (s *suite) probe(path string) int {
	resp, err := http.Get("http://" + s.healthAddr + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gpuNode is an 8-GPU H100 node of zone-a, spine s1, leaf block b1.
func gpuNode(i int) *corev1.Node {
	name := fmt.Sprintf("h100-b1-%d", i)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname":      name,
			"topology.kubernetes.io/zone": "zone-a",
			"mandate.dev/spine-block":     "s1",
			"mandate.dev/leaf-block":      "b1",
			"nvidia.com/gpu.clique":       fmt.Sprintf("b1-c%d", i/4),
			"nvidia.com/gpu.product":      "NVIDIA-H100-80GB-HBM3",
			"nvidia.com/gpu.count":        "8",
		}},
	}
}

// populate creates 8 GPU nodes (one leaf block) and the tenant namespaces,
// and waits until Mandate's cluster state holds them.
func (s *suite) populate(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	c := s.env.Client
	const nodes = 8
	for i := range nodes {
		n := gpuNode(i)
		if err := c.Create(ctx, n); err != nil {
			t.Fatalf("create node: %v", err)
		}
		// The API server's TaintNodesByCondition admission taints a new
		// node not-ready until a node controller clears it: clear it here.
		n.Spec.Taints = nil
		if err := c.Update(ctx, n); err != nil {
			t.Fatalf("untaint node: %v", err)
		}
		// Create ignores status: set the capacity with a status update.
		gpus := resource.MustParse("8")
		n.Status = corev1.NodeStatus{
			Capacity:    corev1.ResourceList{"nvidia.com/gpu": gpus, corev1.ResourceCPU: resource.MustParse("192")},
			Allocatable: corev1.ResourceList{"nvidia.com/gpu": gpus, corev1.ResourceCPU: resource.MustParse("192")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		}
		if err := c.Status().Update(ctx, n); err != nil {
			t.Fatalf("update node status: %v", err)
		}
	}
	// The API server's Priority admission resolves pods' priority classes:
	// create the tiers of the default model, as KAI ships them.
	for name, value := range map[string]int32{"train": 50, "build-preemptible": 75, "build": 100, "inference": 125} {
		if err := c.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}); err != nil {
			t.Fatalf("create priority class %s: %v", name, err)
		}
	}
	for ns, tenant := range tenants {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{ledger.LabelTenant: tenant}}}); err != nil {
			t.Fatalf("create namespace %s: %v", ns, err)
		}
	}
	waitFor(t, 20*time.Second, "the cluster state to see the nodes and namespaces", func() bool {
		fit, err := s.srv.State.Snapshot().Place(topology.Request{Pods: nodes, GPUsPerPod: 8, Resource: "nvidia.com/gpu", RequiredLevel: "block"})
		if err != nil || !fit.FitsNow {
			return false
		}
		for ns, tenant := range tenants {
			if s.srv.State.Namespace(ns).Labels[ledger.LabelTenant] != tenant {
				return false
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
