//go:build load

// Package load drives a real kube-apiserver with bursts of creates through
// `mandate serve` running as its own process, so that it can be killed and
// restarted mid-burst. It checks quota is counted exactly once per pod and
// that with failurePolicy Fail nothing is admitted unevaluated, and prints
// the webhook's latency percentiles.
package load

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/topology/topologytest"
	"github.com/mandate-dev/mandate/webhook"
)

// Tenants of the load model: team-0 … team-9 under one org, each with 50
// guaranteed GPUs.
const (
	tenants    = 10
	guaranteed = 50
)

// harness is a real API server with `mandate serve` registered in front of it.
type harness struct {
	t          *testing.T
	env        *envtest.Env
	binary     string
	args       []string
	environ    []string
	health     string
	metrics    string
	mu         sync.Mutex
	serve      *exec.Cmd
	serveLog   *bytes.Buffer
	serveOut   *lockedWriter
	restartDur time.Duration
	// apiServers, when set, are the clients of every API server of a
	// highly available control plane; bursts spread their creates over them.
	apiServers []client.Client
}

// mandateNamespace is Mandate's own namespace, never governed.
const mandateNamespace = "mandate-system"

// startOptions vary the harness: how the webhooks are registered, how the
// API server runs and what `mandate serve` is given.
type startOptions struct {
	failurePolicy *admissionregistrationv1.FailurePolicyType
	envOptions    []envtest.Option
	// policyArgs replace --policies DIR (e.g. with --bundle URL).
	policyArgs []string
	// policiesDir replaces the default policy directory.
	policiesDir string
	extraArgs   []string
	// environ is added to serve's environment (e.g. the chart's GOMEMLIMIT).
	environ []string
	// clientCert makes the API server present a client certificate and
	// serve require it (--client-ca-file, --client-cn), as the chart does.
	clientCert bool
}

type startOption func(*startOptions)

func start(t *testing.T, opts ...startOption) *harness {
	t.Helper()
	var o startOptions
	for _, opt := range opts {
		opt(&o)
	}
	mutating, validating := webhook.Configurations(webhook.RegistrationOptions{
		Service:       &webhook.ServiceReference{Namespace: mandateNamespace, Name: "mandate", Port: 443},
		Namespace:     mandateNamespace,
		FailurePolicy: o.failurePolicy,
	})
	if o.clientCert {
		o.envOptions = append(o.envOptions, envtest.WithWebhookClientCert())
	}
	env := envtest.Start(t, append([]envtest.Option{envtest.WithWebhooks(crenvtest.WebhookInstallOptions{
		MutatingWebhooks:   []*admissionregistrationv1.MutatingWebhookConfiguration{mutating},
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{validating},
	})}, o.envOptions...)...)
	h := &harness{t: t, env: env, binary: buildMandate(t, env.RepoRoot), health: freeAddr(t), metrics: freeAddr(t)}
	hooks := env.Environment.WebhookInstallOptions
	h.args = []string{"serve",
		"--kubeconfig", adminKubeconfig(t, env),
		"--cert-dir", hooks.LocalServingCertDir,
		"--host", hooks.LocalServingHost,
		"--port", strconv.Itoa(hooks.LocalServingPort),
		"--health-addr", h.health,
		"--metrics-addr", h.metrics,
		"--namespace", mandateNamespace,
	}
	switch {
	case o.policyArgs != nil:
		h.args = append(h.args, o.policyArgs...)
	case o.policiesDir != "":
		h.args = append(h.args, "--policies", o.policiesDir)
	default:
		h.args = append(h.args, "--policies", loadPolicies(t))
	}
	if o.clientCert {
		ca := filepath.Join(t.TempDir(), "client-ca.crt")
		require.NoError(t, os.WriteFile(ca, env.WebhookClientCA.CertPEM, 0o600))
		h.args = append(h.args, "--client-ca-file", ca, "--client-cn", envtest.WebhookClientCN)
	}
	h.args = append(h.args, o.extraArgs...)
	h.environ = o.environ
	h.startServe()
	t.Cleanup(h.stopServe)
	h.waitReady(60 * time.Second)
	h.seed()
	return h
}

func (h *harness) startServe() {
	h.mu.Lock()
	defer h.mu.Unlock()
	cmd := exec.Command(h.binary, h.args...)
	cmd.Env = append(os.Environ(), h.environ...)
	h.serveLog = &bytes.Buffer{}
	h.serveOut = &lockedWriter{w: h.serveLog}
	cmd.Stdout, cmd.Stderr = io.Discard, h.serveOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(h.t, cmd.Start())
	h.serve = cmd
}

// log is what mandate serve wrote to stderr so far.
func (h *harness) log() string {
	h.mu.Lock()
	out := h.serveOut
	h.mu.Unlock()
	out.mu.Lock()
	defer out.mu.Unlock()
	return out.w.String()
}

// kill stops mandate serve the hard way, as a crash would.
func (h *harness) kill() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.serve != nil && h.serve.Process != nil {
		_ = syscall.Kill(-h.serve.Process.Pid, syscall.SIGKILL)
		_ = h.serve.Wait()
		h.serve = nil
	}
}

func (h *harness) stopServe() { h.kill() }

// waitReady polls /readyz until it answers 200.
func (h *harness) waitReady(timeout time.Duration) time.Duration {
	start := time.Now()
	for time.Since(start) < timeout {
		resp, err := http.Get("http://" + h.health + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.mu.Lock()
	log := h.serveLog.String()
	h.mu.Unlock()
	h.t.Fatalf("mandate serve not ready after %s; its log:\n%s", timeout, tail(log, 3000))
	return 0
}

// seed creates the priority classes, the tenants' namespaces and 20 GPU
// nodes, then waits until the server places a pod (its informers caught up).
func (h *harness) seed() {
	ctx := context.Background()
	c := h.env.Client
	require.NoError(h.t, fixtures.CreatePriorityClasses(ctx, c))
	for i := range tenants {
		tenant := fmt.Sprintf("team-%d", i)
		require.NoError(h.t, c.Create(ctx, fixtures.TenantNamespace(tenant, tenant)))
	}
	for i := range 20 {
		require.NoError(h.t, fixtures.CreateNode(ctx, c, fixtures.H100Node(fmt.Sprintf("gpu-%02d", i), fmt.Sprintf("b%d", i/8), fmt.Sprintf("c%d", i/4))))
	}
	deadline := time.Now().Add(envtest.Timeout(30 * time.Second))
	for {
		err := h.create(ctx, gpuPod("team-0", "probe", "train"), true)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("mandate serve never saw the nodes: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func gpuPod(namespace, name, class string) *corev1.Pod {
	return topologytest.GPUPod(namespace, name, 1, topologytest.WithPriorityClass(class))
}

func (h *harness) create(ctx context.Context, pod *corev1.Pod, dryRun bool) error {
	var opts []client.CreateOption
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	ctx, cancel := context.WithTimeout(ctx, envtest.Timeout(10*time.Second))
	defer cancel()
	return h.env.Client.Create(ctx, pod.DeepCopy(), opts...)
}

// buildMandate builds the binary under test once per package run.
func buildMandate(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mandate")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/mandate")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/mandate: %s", out)
	return bin
}

// loadPolicies writes the default Rego with a ten-tenant model beside it.
func loadPolicies(t *testing.T) string {
	t.Helper()
	return fixtures.PolicyDir(t, loadModel)
}

// loadModel replaces the default model's tenants with the load model's:
// team-0 … team-9 under one org.
func loadModel(model map[string]any) {
	quota := func(g, c int) map[string]any {
		return map[string]any{"nvidia.com/gpu": map[string]any{"guaranteed": g, "ceiling": c}}
	}
	teams := map[string]any{"org": map[string]any{"parent": "", "quota": quota(10000, 10000),
		"priorityClasses": []any{"train", "build-preemptible", "build"}, "scheduler": "kai"}}
	for i := range tenants {
		teams[fmt.Sprintf("team-%d", i)] = map[string]any{"parent": "org", "quota": quota(guaranteed, 1000)}
	}
	model["tenants"] = teams
}

func adminKubeconfig(t *testing.T, env *envtest.Env) string {
	t.Helper()
	user, err := env.Environment.AddUser(crenvtest.User{Name: "mandate", Groups: []string{"system:masters"}}, nil)
	require.NoError(t, err)
	kc, err := user.KubeConfig()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, kc, 0o600))
	return path
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// latencyPercentiles reads controller-runtime's webhook latency histogram
// for /mutate from /metrics and interpolates p50 and p99 within buckets.
func (h *harness) latencyPercentiles() (p50, p99 time.Duration, count int, err error) {
	resp, err := http.Get("http://" + h.metrics + "/metrics")
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	type bucket struct {
		le    float64
		count float64
	}
	var buckets []bucket
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "controller_runtime_webhook_latency_seconds_bucket{") || !strings.Contains(line, `webhook="/mutate"`) {
			continue
		}
		i := strings.Index(line, `le="`)
		j := strings.Index(line[i+4:], `"`)
		le, _ := strconv.ParseFloat(line[i+4:i+4+j], 64)
		fields := strings.Fields(line)
		n, _ := strconv.ParseFloat(fields[len(fields)-1], 64)
		buckets = append(buckets, bucket{le, n})
	}
	if len(buckets) == 0 {
		return 0, 0, 0, fmt.Errorf("no controller_runtime_webhook_latency_seconds for /mutate in /metrics")
	}
	sort.Slice(buckets, func(a, b int) bool { return buckets[a].le < buckets[b].le })
	total := buckets[len(buckets)-1].count
	quantile := func(q float64) time.Duration {
		rank, prevLe, prevCount := q*total, 0.0, 0.0
		for _, b := range buckets {
			if b.count >= rank {
				if b.count == prevCount || b.le > 1e9 {
					return time.Duration(prevLe * float64(time.Second))
				}
				frac := (rank - prevCount) / (b.count - prevCount)
				return time.Duration((prevLe + frac*(b.le-prevLe)) * float64(time.Second))
			}
			prevLe, prevCount = b.le, b.count
		}
		return time.Duration(prevLe * float64(time.Second))
	}
	return quantile(0.5), quantile(0.99), int(total), nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func percentile(d []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	if len(s) == 0 {
		return 0
	}
	return s[min(int(q*float64(len(s))), len(s)-1)]
}
