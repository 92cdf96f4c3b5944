// Package sustain is `make bench-sustain`: Mandate as the chart runs it
// (two `mandate serve` replicas sharing the quota ledger, --shared-quota,
// behind one address that hands each connection to the next replica, as a
// Service does; the webhooks registered over TLS with failurePolicy Fail)
// in front of a real API server, or two of them on one etcd, as a highly
// available control plane runs: each API server keeps its own connection to
// a replica, so both replicas decide at once and their commits meet in the
// TenantLedger objects. For a while, client workers create one-, two- and
// four-GPU non-preemptible pods across the tenants as fast as the API
// servers answer, and delete each admitted pod a short life later, so
// quota turns over; every tenant's guarantee (its ceiling too) is small
// enough that many creates are denied for it. Every few seconds the run
// reads the TenantLedgers' size and entries and the GPUs the tenants' pods
// hold. It fails on an error (anything but a policy denial: a webhook
// timeout, the ledger unavailable), on a tenant holding more than its
// guarantee (over-admission), and when the ledger grows: the largest size
// of the last minute may be at most 1.2 times that of the second minute.
//
// TestBenchSustain (build tag benchsustain) is the benchmark itself, for
// BENCH_SUSTAIN_DURATION (5m); TestSustainShort runs the same harness for
// 20 seconds in every `go test ./...`, so the harness cannot rot.
package sustain

import (
	"context"
	"errors"
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
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/test/l4proxy"
	"github.com/mandate-dev/mandate/topology/topologytest"
	"github.com/mandate-dev/mandate/webhook"
)

const (
	mandateNamespace = "mandate-system"
	// quotaDenial is the start of the message of the denial the run
	// provokes: a non-preemptible workload beyond its tenant's guarantee
	// (quotaPolicy.overGuarantee "deny").
	quotaDenial = "non-preemptible work may only use guaranteed GPUs"
	// flatFactor bounds the ledger's growth: the largest size of the last
	// window at most this times the largest of the second window.
	flatFactor = 1.2
	// flatFloor is a size below which the ledger counts as flat whatever
	// the factor: a few reservations more or less in a ledger this small
	// are noise, far from anything etcd's request limit cares about.
	flatFloor = 16 << 10
)

// runConfig is one sustained run.
type runConfig struct {
	duration time.Duration
	// workers create (and delete) pods, each one call after another.
	workers int
	// apiServers is 1 or 2 (two on one etcd: both replicas decide).
	apiServers int
	tenants    int
	// guaranteed is each tenant's guarantee and ceiling of GPUs.
	guaranteed int
	// life is how long an admitted pod lives before its worker deletes it.
	life time.Duration
	// sample is the period of the ledger and usage readings.
	sample time.Duration
	// webhookTimeout, when set, replaces the webhooks' timeoutSeconds
	// (the chart's default otherwise).
	webhookTimeout time.Duration
}

// reading is one sample of the run.
type reading struct {
	at     time.Duration
	ledger envtest.LedgerSize
	// held is the GPUs of each tenant's pods in one consistent listing;
	// maxHeld the largest of them.
	held    map[string]int
	maxHeld int
	creates int64
	load    string
}

// counts are the run's outcomes so far.
type counts struct {
	creates, admitted, denied, unexpectedDenials, errors, deletes atomic.Int64
}

// result is what the run measured.
type result struct {
	cfg                runConfig
	elapsed            time.Duration
	creates, admitted  int64
	denied, unexpected int64
	errors, deletes    int64
	errorKinds         map[string]int
	firstError         string
	firstUnexpected    string
	// overAdmission is the most GPUs a tenant held beyond its guarantee:
	// in the workers' own count (a pod counts from its create's success
	// to its delete's start, so never one that is not stored) and in the
	// readings' listings.
	overAdmission int
	readings      []reading
	perReplica    []float64 // decisions of /mutate per replica
	loadStart     string
	loadEnd       string
}

// sustain runs cfg and returns what it measured; t fails only on a broken
// harness (check judges the result).
func sustain(t *testing.T, cfg runConfig) result {
	t.Helper()
	// The API server's warnings go to controller-runtime's logger.
	ctrllog.SetLogger(logr.Discard())
	ctx := context.Background()
	env := envtest.Start(t)
	clients := []client.Client{fastClient(t, env.Config, env)}
	if cfg.apiServers > 1 {
		second, _ := env.StartSecondAPIServer(t)
		clients = append(clients, fastClient(t, second, env))
	}
	c := env.Client

	// The replicas' serving certificate, and the proxy standing in for
	// the Service.
	hooks := &crenvtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	if err := hooks.PrepWithoutInstalling(); err != nil {
		t.Fatalf("unable to generate the serving certificate: %v", err)
	}
	t.Cleanup(func() { _ = hooks.Cleanup() })
	proxy := l4proxy.Listen(t)

	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mandateNamespace}}))
	must(t, fixtures.CreatePriorityClasses(ctx, c))
	for i := range cfg.tenants {
		must(t, c.Create(ctx, fixtures.TenantNamespace(tenant(i), tenant(i))))
	}
	// Twice the GPUs every tenant may hold: placement never denies.
	nodes := 2*cfg.tenants*cfg.guaranteed/8 + 2
	for i := range nodes {
		must(t, fixtures.CreateNode(ctx, c, fixtures.H100Node(fmt.Sprintf("gpu-%03d", i), fmt.Sprintf("b%d", i/8), fmt.Sprintf("c%d", i/4))))
	}

	binary := buildMandate(t, env.RepoRoot)
	kubeconfig := env.WriteKubeconfig(t, "mandate")
	policies := fixtures.PolicyDir(t, func(model map[string]any) { sustainModel(model, cfg) })
	var replicas []*replica
	var backends []string
	for range 2 {
		r := startReplica(t, binary, kubeconfig, policies, hooks)
		replicas = append(replicas, r)
		backends = append(backends, r.addr)
	}
	proxy.Serve(backends)
	for _, r := range replicas {
		r.waitReady(t, envtest.Timeout(2*time.Minute))
	}
	registration := webhook.RegistrationOptions{
		URL:       fmt.Sprintf("https://%s:%d", hooks.LocalServingHost, proxy.Port()),
		CABundle:  hooks.LocalServingCAData,
		Namespace: mandateNamespace,
	}
	if cfg.webhookTimeout > 0 {
		registration.TimeoutSeconds = int32(min(cfg.webhookTimeout, 30*time.Second) / time.Second)
	}
	mutating, validating := webhook.Configurations(registration)
	must(t, c.Create(ctx, mutating))
	must(t, c.Create(ctx, validating))
	// Every API server decides through Mandate before the run begins.
	for _, cl := range clients {
		waitAdmitting(t, cl)
	}

	res := result{cfg: cfg, errorKinds: map[string]int{}, loadStart: loadAvg()}
	var n counts
	var mu sync.Mutex // res.errorKinds, firstError, firstUnexpected, overAdmission
	tracker := newHeldTracker(cfg.guaranteed)
	var seq atomic.Int64
	stop := make(chan struct{})
	began := time.Now()
	var wg sync.WaitGroup
	for w := range cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := clients[w%len(clients)]
			var alive []livePod // admitted, oldest first
			fail := func(kind, msg string) {
				n.errors.Add(1)
				mu.Lock()
				res.errorKinds[kind]++
				if res.firstError == "" {
					res.firstError = msg
				}
				mu.Unlock()
			}
			remove := func(p livePod) {
				tracker.release(p.namespace, p.gpus)
				dctx, cancel := context.WithTimeout(ctx, envtest.Timeout(30*time.Second))
				defer cancel()
				err := cl.Delete(dctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: p.name}},
					client.GracePeriodSeconds(0))
				if err != nil && !apierrors.IsNotFound(err) {
					fail("delete: "+errorKind(err), fmt.Sprintf("delete %s/%s: %v", p.namespace, p.name, err))
					return
				}
				n.deletes.Add(1)
			}
			for {
				select {
				case <-stop:
					for _, p := range alive {
						remove(p)
					}
					return
				default:
				}
				for len(alive) > 0 && time.Now().After(alive[0].due) {
					remove(alive[0])
					alive = alive[1:]
				}
				i := seq.Add(1)
				p := livePod{namespace: tenant(int(i) % cfg.tenants), name: fmt.Sprintf("sustain-%08d", i), gpus: []int{1, 2, 4}[i%3]}
				pod := topologytest.GPUPod(p.namespace, p.name, int64(p.gpus), topologytest.WithPriorityClass("build"))
				cctx, cancel := context.WithTimeout(ctx, envtest.Timeout(30*time.Second))
				err := cl.Create(cctx, pod)
				cancel()
				n.creates.Add(1)
				switch {
				case err == nil:
					n.admitted.Add(1)
					if over := tracker.hold(p.namespace, p.gpus); over > 0 {
						mu.Lock()
						res.overAdmission = max(res.overAdmission, over)
						mu.Unlock()
					}
					p.due = time.Now().Add(cfg.life)
					alive = append(alive, p)
				case isDenial(err) && strings.Contains(err.Error(), quotaDenial):
					n.denied.Add(1)
				case isDenial(err):
					n.unexpectedDenials.Add(1)
					mu.Lock()
					if res.firstUnexpected == "" {
						res.firstUnexpected = err.Error()
					}
					mu.Unlock()
				default:
					fail("create: "+errorKind(err), fmt.Sprintf("create %s/%s: %v", p.namespace, p.name, err))
				}
			}
		}()
	}

	// The readings, until the workers stop.
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(cfg.sample)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			r, err := read(ctx, c, cfg, time.Since(began))
			if err != nil {
				t.Logf("reading at %s: %v", time.Since(began).Round(time.Second), err)
				continue
			}
			r.creates = n.creates.Load()
			mu.Lock()
			res.readings = append(res.readings, r)
			res.overAdmission = max(res.overAdmission, r.maxHeld-cfg.guaranteed)
			mu.Unlock()
		}
	}()

	time.Sleep(cfg.duration)
	close(stop)
	res.elapsed = time.Since(began)
	wg.Wait()
	<-sampled
	res.loadEnd = loadAvg()
	res.creates, res.admitted, res.denied = n.creates.Load(), n.admitted.Load(), n.denied.Load()
	res.unexpected, res.errors, res.deletes = n.unexpectedDenials.Load(), n.errors.Load(), n.deletes.Load()
	for _, r := range replicas {
		res.perReplica = append(res.perReplica, r.decisions(t))
	}
	return res
}

// livePod is an admitted pod its worker deletes once due.
type livePod struct {
	namespace, name string
	gpus            int
	due             time.Time
}

// heldTracker is the workers' own count of the GPUs each tenant's stored
// pods hold: a pod counts from its create's success to its delete's start,
// so the count never includes a pod that is not stored, and a count above
// the guarantee is an over-admission.
type heldTracker struct {
	mu         sync.Mutex
	guaranteed int
	held       map[string]int
}

func newHeldTracker(guaranteed int) *heldTracker {
	return &heldTracker{guaranteed: guaranteed, held: map[string]int{}}
}

// hold counts gpus for namespace and returns how far its tenant is beyond
// the guarantee (0 within it).
func (h *heldTracker) hold(namespace string, gpus int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held[namespace] += gpus
	return max(0, h.held[namespace]-h.guaranteed)
}

func (h *heldTracker) release(namespace string, gpus int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held[namespace] -= gpus
}

// read samples the ledger and the GPUs the tenants' pods hold.
func read(ctx context.Context, c client.Client, cfg runConfig, at time.Duration) (reading, error) {
	ctx, cancel := context.WithTimeout(ctx, envtest.Timeout(10*time.Second))
	defer cancel()
	r := reading{at: at, held: map[string]int{}, load: loadAvg()}
	var err error
	if r.ledger, err = envtest.ReadLedger(ctx, c); err != nil {
		return r, err
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		return r, fmt.Errorf("unable to list the pods: %w", err)
	}
	for _, p := range pods.Items {
		for _, ctr := range p.Spec.Containers {
			q := ctr.Resources.Limits[topologytest.GPUResource]
			r.held[p.Namespace] += int(q.Value())
		}
	}
	for i := range cfg.tenants {
		r.maxHeld = max(r.maxHeld, r.held[tenant(i)])
	}
	return r, nil
}

func tenant(i int) string { return fmt.Sprintf("team-%d", i) }

// sustainModel gives the default model tenants team-0 … under one org,
// each with guaranteed = ceiling = cfg.guaranteed GPUs, and denies
// non-preemptible work beyond a guarantee.
func sustainModel(model map[string]any, cfg runConfig) {
	quota := func(n int) map[string]any {
		return map[string]any{"nvidia.com/gpu": map[string]any{"guaranteed": n, "ceiling": n}}
	}
	teams := map[string]any{"org": map[string]any{"parent": "", "quota": quota(cfg.tenants * cfg.guaranteed),
		"priorityClasses": []any{"train", "build-preemptible", "build"}, "scheduler": "kai"}}
	for i := range cfg.tenants {
		teams[tenant(i)] = map[string]any{"parent": "org", "quota": quota(cfg.guaranteed)}
	}
	model["tenants"] = teams
	model["quotaPolicy"] = map[string]any{"overGuarantee": "deny"}
}

// isDenial is a create the webhook answered with a verdict: denied.
func isDenial(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "denied the request")
}

// errorKind groups errors for the report.
func errorKind(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "quota ledger"):
		return "ledger unavailable"
	case strings.Contains(msg, "failed calling webhook") && (strings.Contains(msg, "deadline") || strings.Contains(msg, "timeout")):
		return "webhook timeout"
	case strings.Contains(msg, "failed calling webhook"):
		return "webhook call failed"
	case errors.Is(err, context.DeadlineExceeded):
		return "client timeout"
	}
	if s := apierrors.ReasonForError(err); s != "" {
		return string(s)
	}
	return "other"
}

// fastClient is a client of the API server at cfg without client-side
// rate limits: the harness drives as fast as the server answers.
func fastClient(t *testing.T, cfg *rest.Config, env *envtest.Env) client.Client {
	t.Helper()
	rc := rest.CopyConfig(cfg)
	rc.QPS, rc.Burst = 1e6, 1e6
	c, err := client.New(rc, client.Options{Scheme: env.Scheme})
	must(t, err)
	return c
}

// waitAdmitting waits until a dry-run create through cl is decided by
// Mandate: the webhook configuration is read and the replicas' informers
// have seen the nodes.
func waitAdmitting(t *testing.T, cl client.Client) {
	t.Helper()
	deadline := time.Now().Add(envtest.Timeout(60 * time.Second))
	for {
		pod := topologytest.GPUPod(tenant(0), "probe", 1, topologytest.WithPriorityClass("build"))
		ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(10*time.Second))
		err := cl.Create(ctx, pod, client.DryRunAll)
		cancel()
		if err == nil && pod.Annotations[review.AnnotationPolicyRevision] != "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Mandate never decided a create through the API server (last: %v, annotations %v)", err, pod.Annotations)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// replica is one `mandate serve` with the shared ledger, as the chart runs
// it, on a port of its own behind the proxy.
type replica struct {
	cmd             *exec.Cmd
	log             *lockedBuffer
	addr            string
	health, metrics string
}

func startReplica(t *testing.T, binary, kubeconfig, policies string, hooks *crenvtest.WebhookInstallOptions) *replica {
	t.Helper()
	port := freePort(t)
	r := &replica{log: &lockedBuffer{}, addr: fmt.Sprintf("%s:%d", hooks.LocalServingHost, port),
		health: fmt.Sprintf("127.0.0.1:%d", freePort(t)), metrics: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	r.cmd = exec.Command(binary, "serve",
		"--kubeconfig", kubeconfig,
		"--cert-dir", hooks.LocalServingCertDir,
		"--host", hooks.LocalServingHost,
		"--port", strconv.Itoa(port),
		"--health-addr", r.health,
		"--metrics-addr", r.metrics,
		"--namespace", mandateNamespace,
		"--policies", policies,
		"--shared-quota")
	r.cmd.Stdout, r.cmd.Stderr = io.Discard, r.log
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must(t, r.cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		_ = r.cmd.Wait()
	})
	return r
}

func (r *replica) waitReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + r.health + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("mandate serve (%s) not ready after %s; its log:\n%s", r.addr, timeout, r.log.tail(3000))
}

// decisions is how many AdmissionReviews the replica's /mutate answered
// (controller-runtime's webhook request counter).
func (r *replica) decisions(t *testing.T) float64 {
	t.Helper()
	resp, err := http.Get("http://" + r.metrics + "/metrics")
	must(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	must(t, err)
	var sum float64
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "controller_runtime_webhook_requests_total{") || !strings.Contains(line, `webhook="/mutate"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		must(t, err)
		sum += v
	}
	return sum
}

func buildMandate(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mandate")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/mandate")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/mandate: %v: %s", err, out)
	}
	return bin
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	return s[max(0, len(s)-n):]
}

// sortedKeys are m's keys in order.
func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
