//go:build benchscale

// Package benchscale is `make bench-scale`: the reference cluster (12,500
// nodes × 8 GPUs with the model's level labels) and up to 150k bound,
// running pods loaded into a real API server, then `mandate serve` started
// against it as its own process (--kubeconfig, as test/load and hack/demo
// start it). For each pod count it prints serve's time to /readyz (and the
// informers' sync as serve logs it), its resident memory (VmRSS, VmHWM) at
// ready and after the load, the latency of decisions through the webhook
// at c=1 (a 1,000 × 8-GPU Job POSTed to /mutate), and a 1,000-pod gang:
// a Job of 1,000 × 8 GPUs created through the API server, then its pods
// as the Job controller creates them. A slow machine makes the numbers
// slower, never fails it; a wrong answer (a gang pod not decided as part
// of its Job) fails it.
//
// Knobs (environment): BENCH_SCALE_PODS ("10000 50000 100000 150000"),
// BENCH_SCALE_NODES (12500), BENCH_SCALE_WORKERS (64 concurrent creates),
// BENCH_SCALE_GANG (1000 pods), BENCH_SCALE_DECISIONS (300),
// BENCH_SCALE_GPU_FILL (0.8: pods beyond that share of the GPUs take
// none, so a gang still fits), BENCH_SCALE_COMPARE (a second mandate
// binary, e.g. an older build, run beside this one at every pod count),
// BENCH_SCALE_SHARED ("false" runs the replicas with their quota in
// memory: what the shared ledger costs), BENCH_SCALE_GOMEMLIMIT (serve's GOMEMLIMIT; default 90% of the chart's
// memory limit, as the chart sets it; empty for none), BENCH_SCALE_HEAP_PROFILE
// (a directory: after the last pod count, serve runs in this process for
// a minute and its heap profile at the peak is written there and its top
// printed), BENCH_SCALE_PPROF (a directory: the first replica serves
// pprof, and a CPU profile of its startup, from its manager's start for
// BENCH_SCALE_PPROF_SECONDS (20), a heap profile at ready, and a CPU
// profile of the gang's first BENCH_SCALE_PPROF_SECONDS are written there
// for each pod count).
package benchscale

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
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
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/test/l4proxy"
	"github.com/mandate-dev/mandate/topology/topologytest"
	"github.com/mandate-dev/mandate/webhook"
)

const (
	tenants          = 10
	mandateNamespace = "mandate-system"
)

type benchConfig struct {
	pods      []int
	nodes     int
	workers   int
	gang      int
	decisions int
	gpuFill   float64
	// replicas run behind one address sharing the quota ledger, as the
	// chart runs them (BENCH_SCALE_REPLICAS, default the chart's 2).
	replicas int
	// inMemory runs each replica with its quota in memory instead
	// (BENCH_SCALE_SHARED=false): what the shared ledger costs, read
	// beside a run as the chart runs it.
	inMemory bool
	// memLimit is serve's GOMEMLIMIT: goMemLimitPercent of the
	// chart's memory limit, as the chart sets it; "" leaves it unset.
	memLimit string
	// pprofDir receives the first replica's startup profiles
	// (BENCH_SCALE_PPROF); "" takes none.
	pprofDir     string
	pprofSeconds int
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q is not a count", name, v)
	}
	return n
}

func readConfig(t *testing.T) benchConfig {
	c := benchConfig{nodes: envInt(t, "BENCH_SCALE_NODES", 12500), workers: envInt(t, "BENCH_SCALE_WORKERS", 64),
		gang: envInt(t, "BENCH_SCALE_GANG", 1000), decisions: envInt(t, "BENCH_SCALE_DECISIONS", 300), gpuFill: 0.8,
		replicas: envInt(t, "BENCH_SCALE_REPLICAS", 2)}
	pods := os.Getenv("BENCH_SCALE_PODS")
	if pods == "" {
		pods = "10000 50000 100000 150000"
	}
	for _, f := range strings.Fields(pods) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || (len(c.pods) > 0 && n < c.pods[len(c.pods)-1]) {
			t.Fatalf("BENCH_SCALE_PODS=%q: want increasing counts", pods)
		}
		c.pods = append(c.pods, n)
	}
	if v := os.Getenv("BENCH_SCALE_GPU_FILL"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			t.Fatalf("BENCH_SCALE_GPU_FILL=%q: want a share in [0, 1]", v)
		}
		c.gpuFill = f
	}
	c.inMemory = os.Getenv("BENCH_SCALE_SHARED") == "false"
	c.pprofDir, c.pprofSeconds = os.Getenv("BENCH_SCALE_PPROF"), envInt(t, "BENCH_SCALE_PPROF_SECONDS", 20)
	c.memLimit = strconv.Itoa(fixtures.ChartGoMemLimit)
	if v, ok := os.LookupEnv("BENCH_SCALE_GOMEMLIMIT"); ok {
		c.memLimit = v
	}
	if c.nodes < 1 || c.workers < 1 || c.gang < 1 || c.decisions < 1 || c.replicas < 1 {
		t.Fatal("BENCH_SCALE_NODES, _WORKERS, _GANG, _DECISIONS and _REPLICAS must be at least 1")
	}
	return c
}

// scaleModel gives the default model's topology ten teams under one
// organisation, with the quota of the whole reference cluster.
func scaleModel(model map[string]any) {
	quota := func(g, c int) map[string]any {
		return map[string]any{"nvidia.com/gpu": map[string]any{"guaranteed": g, "ceiling": c}}
	}
	teams := map[string]any{"org": map[string]any{"parent": "", "quota": quota(1_000_000, 1_000_000),
		"priorityClasses": []any{"train", "build-preemptible", "build"}, "scheduler": "kai"}}
	for i := range tenants {
		teams[fmt.Sprintf("team-%d", i)] = map[string]any{"parent": "org", "quota": quota(20_000, 1_000_000)}
	}
	model["tenants"] = teams
}

func TestBenchScale(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	cfg := readConfig(t)
	ctx := context.Background()
	mutating, validating := webhook.Configurations(webhook.RegistrationOptions{
		Service:   &webhook.ServiceReference{Namespace: mandateNamespace, Name: "mandate", Port: 443},
		Namespace: mandateNamespace,
	})
	env := envtest.Start(t,
		envtest.WithWebhooks(crenvtest.WebhookInstallOptions{
			MutatingWebhooks:   []*admissionregistrationv1.MutatingWebhookConfiguration{mutating},
			ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{validating},
		}),
		envtest.WithAPIServerArg("max-requests-inflight", "3000"),
		envtest.WithAPIServerArg("max-mutating-requests-inflight", "1500"),
		// Nodes are registered Ready with their status at once: no
		// not-ready taint for a node lifecycle controller to lift.
		envtest.WithAPIServerArg("disable-admission-plugins", "ServiceAccount,TaintNodesByCondition"),
		envtest.WithEtcdArg("quota-backend-bytes", strconv.Itoa(16<<30)),
		envtest.WithEtcdArg("unsafe-no-fsync", "true"),
	)
	// The webhook's address is a round-robin proxy in front of the
	// replicas, as the chart's Service is.
	proxy := l4proxy.Listen(t)
	hooks := newHooks(t, env, proxy.Port())
	// Loading is not admission: the webhooks are registered only while
	// serve is measured.
	hooks.unregister(ctx)

	rc := rest.CopyConfig(env.Config)
	rc.QPS, rc.Burst = 1e6, 1e6
	rc.ContentType = runtime.ContentTypeProtobuf
	loader, err := client.New(rc, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := fixtures.CreatePriorityClasses(ctx, loader); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{mandateNamespace} {
		if err := loader.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range tenants {
		if err := loader.Create(ctx, fixtures.TenantNamespace(fmt.Sprintf("team-%d", i), fmt.Sprintf("team-%d", i))); err != nil {
			t.Fatal(err)
		}
	}

	root := env.RepoRoot
	binaries := []struct{ name, path string }{{"this build", buildMandate(t, root)}}
	if other := os.Getenv("BENCH_SCALE_COMPARE"); other != "" {
		binaries = append(binaries, struct{ name, path string }{"compare (" + filepath.Base(other) + ")", other})
	}
	policies := fixtures.PolicyDir(t, scaleModel)
	kubeconfig := adminKubeconfig(t, env)

	start := time.Now()
	if err := createNodes(ctx, loader, 0, cfg.nodes, cfg.nodes, cfg.workers); err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded %d nodes × %d GPUs in %s (%.0f nodes/s) — %s", cfg.nodes, gpusPerNode, since(start),
		float64(cfg.nodes)/time.Since(start).Seconds(), loadAvg())

	gpuPods := int(cfg.gpuFill * float64(cfg.nodes*gpusPerNode))
	var rows []row
	loaded := 0
	for stage, n := range cfg.pods {
		start := time.Now()
		if err := createPods(ctx, loader, loaded, n, gpuPods, cfg.nodes, tenants, cfg.workers); err != nil {
			t.Fatalf("loading pods: %v", err)
		}
		t.Logf("loaded pods %d…%d (bound, Running) in %s (%.0f pods/s) — %s", loaded, n, since(start),
			float64(n-loaded)/time.Since(start).Seconds(), loadAvg())
		loaded = n
		hooks.register(ctx)
		for _, b := range binaries {
			r := measure(t, ctx, env, loader, proxy, cfg, b.path, kubeconfig, policies, n, fmt.Sprintf("gang-%d-%d", stage, len(rows)))
			r.binary, r.pods, r.gpuPods = b.name, n, min(n, gpuPods)
			hooks.unregister(ctx)
			// The API server's own time for the same pods, no webhook:
			// what Mandate adds is the difference.
			r.bareGang = createBareGang(t, ctx, loader, cfg, fmt.Sprintf("bare-%d-%d", stage, len(rows)))
			hooks.register(ctx)
			rows = append(rows, r)
			t.Log(r.String())
		}
		hooks.unregister(ctx)
	}
	fmt.Print(report(rows, cfg))
	if dir := os.Getenv("BENCH_SCALE_HEAP_PROFILE"); dir != "" {
		heapProfile(t, env, policies, dir, loaded, 75*time.Second)
	}
}

func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }

// row is one pod count measured with one binary.
type row struct {
	binary             string
	pods, gpuPods      int
	ready, informers   time.Duration
	decides            time.Duration // start to the first correct decision
	stateLag           time.Duration // the cache synced to the state synced, as serve logs it
	rssReady, hwmReady int64
	rssAfter, hwmAfter int64
	p50, p99, max      time.Duration
	decisions          int
	decideErrors       int           // server errors (evaluation deadline) among them
	gangTotal          time.Duration // the Job's create to the last pod admitted
	bareGang           time.Duration // the same Job and pods created with no webhook registered
	lastPod            time.Duration // the last pod's create to its admission
	podP50, podP99     time.Duration
	podMax             time.Duration
	ownerFailures      int
	load               string
}

func (r row) String() string {
	return fmt.Sprintf("%s, %d pods (%d with GPUs): ready %s (%s after the manager started its informers; state behind the cache by %s; first correct decision at %s), RSS at ready %s (HWM %s), after load %s (HWM %s); "+
		"decisions c=1 p50 %s p99 %s max %s over %d (%d not decided in time); gang: Job create → last pod admitted %s (no webhook %s, %s added), last pod create → admitted %s, "+
		"pod admission p50 %s p99 %s max %s, owner-read failures %d; %s",
		r.binary, r.pods, r.gpuPods, r.ready.Round(10*time.Millisecond), orNA(r.informers), orNA(r.stateLag), r.decides.Round(10*time.Millisecond),
		mib(r.rssReady), mib(r.hwmReady),
		mib(r.rssAfter), mib(r.hwmAfter), ms(r.p50), ms(r.p99), ms(r.max), r.decisions, r.decideErrors, r.gangTotal.Round(time.Millisecond),
		r.bareGang.Round(time.Millisecond), r.added(),
		ms(r.lastPod), ms(r.podP50), ms(r.podP99), ms(r.podMax), r.ownerFailures, r.load)
}

// added is what the webhook added to the gang's create time, in percent
// of the API server's own time for the same pods.
func (r row) added() string {
	if r.bareGang <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%+.0f%%", 100*(float64(r.gangTotal)/float64(r.bareGang)-1))
}

func orNA(d time.Duration) string {
	if d == 0 {
		return "n/a"
	}
	return d.Round(time.Millisecond).String()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

func mib(kb int64) string { return fmt.Sprintf("%dMiB", kb/1024) }

func report(rows []row, cfg benchConfig) string {
	var b strings.Builder
	quota := "sharing the quota ledger behind one address, as the chart runs them"
	if cfg.inMemory {
		quota = "each with its quota in memory (BENCH_SCALE_SHARED=false, not as the chart runs them), behind one address"
	}
	fmt.Fprintf(&b, "\nbench-scale: %d nodes × %d GPUs, pods bound and Running (1 GPU each up to %.0f%% of the GPUs, none beyond); %d replica(s) %s (ready, RSS: the slowest, the largest); chart memory limit %s; serve's GOMEMLIMIT %q\n",
		cfg.nodes, gpusPerNode, cfg.gpuFill*100, cfg.replicas, quota, mib(fixtures.ChartMemoryLimit/1024), cfg.memLimit)
	fmt.Fprintf(&b, "| binary | pods | ready | ready after informers start | first correct decision | RSS ready (HWM) | RSS after load (HWM) | ≤ limit | decision c=1 p50/p99/max (not in time) | gang Job→last pod | same pods, no webhook | added | last pod create→admitted | gang pod p50/p99/max | owner-read failures | load average |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		within := "yes"
		if max(r.hwmReady, r.hwmAfter)*1024 > fixtures.ChartMemoryLimit {
			within = "NO"
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s (%s) | %s (%s) | %s | %s / %s / %s (%d) | %s | %s | %s | %s | %s / %s / %s | %d | %s |\n",
			r.binary, r.pods, r.ready.Round(10*time.Millisecond), orNA(r.informers), r.decides.Round(10*time.Millisecond), mib(r.rssReady), mib(r.hwmReady),
			mib(r.rssAfter), mib(r.hwmAfter), within, ms(r.p50), ms(r.p99), ms(r.max), r.decideErrors, r.gangTotal.Round(time.Millisecond),
			r.bareGang.Round(time.Millisecond), r.added(),
			ms(r.lastPod), ms(r.podP50), ms(r.podP99), ms(r.podMax), r.ownerFailures, r.load)
	}
	return b.String()
}

// replica is one started `mandate serve`.
type replica struct {
	cmd    *exec.Cmd
	log    *lineLog
	health string
	addr   string // its webhook address, behind the proxy
	pprof  string // its pprof address; "" when it serves none
}

// startReplica starts one serve with the shared ledger, as the chart runs
// it, serving on a port of its own.
func startReplica(t *testing.T, cfg benchConfig, binary, kubeconfig, policies string, hooks crenvtest.WebhookInstallOptions, pprof bool) *replica {
	t.Helper()
	r := &replica{log: &lineLog{}, health: freeAddr(t)}
	if pprof {
		r.pprof = freeAddr(t)
	}
	_, port, err := net.SplitHostPort(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	r.addr = net.JoinHostPort(hooks.LocalServingHost, port)
	r.cmd = exec.Command(binary, "serve",
		"--kubeconfig", kubeconfig,
		"--cert-dir", hooks.LocalServingCertDir,
		"--host", hooks.LocalServingHost,
		"--port", port,
		"--health-addr", r.health,
		"--metrics-addr", freeAddr(t),
		"--namespace", mandateNamespace,
		"--policies", policies)
	if !cfg.inMemory {
		r.cmd.Args = append(r.cmd.Args, "--shared-quota")
	}
	if r.pprof != "" {
		r.cmd.Args = append(r.cmd.Args, "--pprof-addr", r.pprof)
	}
	r.cmd.Stdout, r.cmd.Stderr = io.Discard, r.log
	r.cmd.Env = os.Environ()
	if cfg.memLimit != "" {
		r.cmd.Env = append(r.cmd.Env, "GOMEMLIMIT="+cfg.memLimit)
	}
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return r
}

// profile writes the replica's pprof profile of the given path (after
// /debug/pprof/) to file, waiting for its pprof server until deadline.
func (r *replica) profile(file, path string, deadline time.Time) error {
	for {
		resp, err := http.Get("http://" + r.pprof + "/debug/pprof/" + path)
		if err == nil {
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %s", path, resp.Status)
			}
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			return os.WriteFile(file, raw, 0o600)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: pprof never served: %w", path, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *replica) stop() {
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	_ = r.cmd.Wait()
}

// vm is the replica's resident memory and its high-water mark.
func (r *replica) vm(t *testing.T) (rss, hwm int64) { return vm(t, r.cmd.Process.Pid) }

// measure starts the replicas behind the proxy, waits for every /readyz,
// and measures memory (the largest replica's), decisions and one gang,
// then stops them.
func measure(t *testing.T, ctx context.Context, env *envtest.Env, c client.Client, proxy *l4proxy.RoundRobin, cfg benchConfig, binary, kubeconfig, policies string, pods int, gang string) row {
	t.Helper()
	hooks := env.Environment.WebhookInstallOptions
	started := time.Now()
	replicas := make([]*replica, cfg.replicas)
	backends := make([]string, cfg.replicas)
	for i := range replicas {
		replicas[i] = startReplica(t, cfg, binary, kubeconfig, policies, hooks, i == 0 && cfg.pprofDir != "")
		defer replicas[i].stop()
		backends[i] = replicas[i].addr
	}
	var cpuProfile chan error
	if cfg.pprofDir != "" {
		cpuProfile = make(chan error, 1)
		go func() {
			cpuProfile <- replicas[0].profile(filepath.Join(cfg.pprofDir, fmt.Sprintf("cpu-%s-%d.pprof", filepath.Base(binary), pods)),
				fmt.Sprintf("profile?seconds=%d", cfg.pprofSeconds), started.Add(envtest.Timeout(time.Minute)))
		}()
	}
	proxy.Serve(backends)
	var r row
	deadline := started.Add(envtest.Timeout(10 * time.Minute))
	for _, rep := range replicas {
		for {
			resp, err := http.Get("http://" + rep.health + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("mandate serve not ready after %s with %d pods; its log:\n%s", since(started), pods, rep.log.tail(4000))
			}
			time.Sleep(20 * time.Millisecond)
		}
		// The slowest replica's figures: the install is ready when every
		// replica is.
		r.ready = time.Since(started)
		if m := rep.log.started(); !m.IsZero() {
			r.informers = max(r.informers, time.Since(m))
		}
		r.stateLag = max(r.stateLag, rep.log.synced())
	}
	for _, rep := range replicas {
		rss, hwm := rep.vm(t)
		r.rssReady, r.hwmReady = max(r.rssReady, rss), max(r.hwmReady, hwm)
	}
	if cpuProfile != nil {
		heap := filepath.Join(cfg.pprofDir, fmt.Sprintf("heap-%s-%d.pprof", filepath.Base(binary), pods))
		if err := replicas[0].profile(heap, "heap", time.Now().Add(time.Minute)); err != nil {
			t.Errorf("heap profile at ready: %v", err)
		}
		if err := <-cpuProfile; err != nil {
			t.Errorf("CPU profile of the startup: %v", err)
		}
	}
	hooks.LocalServingPort = proxy.Port()
	// Ready must mean the whole cluster is in the state: a Job the
	// cluster has room for is admitted at once. A serve that reports
	// ready early is measured from when it first admits it.
	for {
		var slow int
		_, err := decide(hooks, 1, cfg.gang, &slow)
		if err == nil && slow == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mandate serve, ready with %d pods, never admitted the Job: %v\n%s", pods, err, replicas[0].log.tail(4000))
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.decides = time.Since(started)

	durs, err := decide(hooks, cfg.decisions, cfg.gang, &r.decideErrors)
	if err != nil {
		t.Fatalf("deciding through the webhook: %v", err)
	}
	r.decisions = len(durs)
	r.p50, r.p99, r.max = percentile(durs, 0.5), percentile(durs, 0.99), percentile(durs, 1)

	var gangProfile chan error
	if cfg.pprofDir != "" {
		gangProfile = make(chan error, 1)
		go func() {
			gangProfile <- replicas[0].profile(filepath.Join(cfg.pprofDir, fmt.Sprintf("gang-%s-%d.pprof", filepath.Base(binary), pods)),
				fmt.Sprintf("profile?seconds=%d", cfg.pprofSeconds), time.Now().Add(time.Minute))
		}()
	}
	g := runGang(t, ctx, c, cfg, gang)
	if gangProfile != nil {
		if err := <-gangProfile; err != nil {
			t.Errorf("CPU profile of the gang: %v", err)
		}
	}
	r.gangTotal, r.lastPod, r.ownerFailures = g.total, g.lastPod, g.failures
	for _, rep := range replicas {
		r.ownerFailures += rep.log.count("unable to read owner")
		rss, hwm := rep.vm(t)
		r.rssAfter, r.hwmAfter = max(r.rssAfter, rss), max(r.hwmAfter, hwm)
	}
	r.podP50, r.podP99, r.podMax = percentile(g.admissions, 0.5), percentile(g.admissions, 0.99), percentile(g.admissions, 1)
	r.load = loadAvg()
	if err := deleteGang(ctx, c, gang); err != nil {
		t.Fatal(err)
	}
	return r
}

// jobOf is a Job of pods × 8 GPUs of team-0's preemptible training.
func jobOf(name string, pods int) *batchv1.Job {
	gpus := resource.MustParse(strconv.Itoa(gpusPerNode))
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-0", Name: name},
		Spec: batchv1.JobSpec{Parallelism: ptr.To(int32(pods)), Completions: ptr.To(int32(pods)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": "pretrain"}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, PriorityClassName: "train",
					Containers: []corev1.Container{{Name: "trainer", Image: "registry.example/ml/trainer:v2.4.1",
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{topologytest.GPUResource: gpus}}}}}}},
	}
}

// decide POSTs n AdmissionReviews of a Job of the gang's size (1,000 ×
// 8 GPUs) to serve's /mutate, one at a time, and returns each one's
// latency. A denial is a wrong answer: the cluster has room and the tenant
// quota; a server error (the evaluation's deadline on a busy machine) is
// counted in slow.
func decide(hooks crenvtest.WebhookInstallOptions, n, pods int, slow *int) ([]time.Duration, error) {
	raw, err := json.Marshal(jobOf("decide", pods))
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: 1} //nolint:gosec // the envtest serving certificate
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	url := fmt.Sprintf("https://%s/mutate", net.JoinHostPort(hooks.LocalServingHost, strconv.Itoa(hooks.LocalServingPort)))
	var out []time.Duration
	for i := range n {
		body, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: types.UID(fmt.Sprintf("decide-%d", i)),
				Kind:      metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"},
				Resource:  metav1.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"},
				Namespace: "team-0", Name: "decide", Operation: admissionv1.Create, DryRun: ptr.To(true),
				UserInfo: authUser(), Object: runtime.RawExtension{Raw: raw}},
		})
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		var review admissionv1.AdmissionReview
		err = json.NewDecoder(resp.Body).Decode(&review)
		resp.Body.Close()
		out = append(out, time.Since(t0))
		if err != nil {
			return nil, fmt.Errorf("decision %d: %w", i, err)
		}
		switch {
		case review.Response == nil:
			return nil, fmt.Errorf("decision %d: no response", i)
		case review.Response.Allowed:
		case review.Response.Result != nil && review.Response.Result.Code >= 500:
			// Not decided in time on a busy machine: slower, not wrong.
			*slow++
		default:
			return nil, fmt.Errorf("decision %d: a %d × 8-GPU Job the cluster and the quota have room for was not admitted: %+v", i, pods, review.Response)
		}
	}
	return out, nil
}

func authUser() authenticationv1.UserInfo {
	return authenticationv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}}
}

type gangResult struct {
	total, lastPod time.Duration
	admissions     []time.Duration
	failures       int
}

// runGang creates a Job of cfg.gang × 8 GPUs through the API server (the
// webhook admits it), then its pods as the Job controller does: from its
// template, controlled by it, cfg.workers at a time. Every pod must be
// admitted as a member of the gang (the Job's directives); a create that
// fails is an owner-read failure the Job controller would retry.
func runGang(t *testing.T, ctx context.Context, c client.Client, cfg benchConfig, name string) gangResult {
	t.Helper()
	job := jobOf(name, cfg.gang)
	t0 := time.Now()
	if err := c.Create(ctx, job); err != nil {
		t.Fatalf("creating the gang's Job: %v", err)
	}
	want, ok, err := scheduler.RecordedDirectives(job.Annotations)
	if err != nil || !ok {
		t.Fatalf("the Job was admitted without recorded directives (%v): %v", err, job.Annotations)
	}
	res, err := createGangPods(ctx, c, cfg, job, t0)
	if err != nil {
		t.Fatalf("creating the gang's pods: %v", err)
	}
	var wrong []string
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{"job-name": name}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		got, ok, err := scheduler.RecordedDirectives(p.Annotations)
		if err != nil || !ok || got.GangMin != want.GangMin || got.Queue != want.Queue || got.Scheduler != want.Scheduler ||
			got.Preemptible != want.Preemptible || got.PriorityClass != want.PriorityClass {
			wrong = append(wrong, fmt.Sprintf("%s: %+v (ok %v, %v)", p.Name, got, ok, err))
		}
	}
	if len(pods.Items) != cfg.gang || len(wrong) > 0 {
		t.Fatalf("the gang's %d pods (of %d) must all carry the Job's directives %+v; %d do not, e.g. %v",
			len(pods.Items), cfg.gang, want, len(wrong), wrong[:min(3, len(wrong))])
	}
	return res
}

// createGangPods creates job's pods as the Job controller does: from its
// template, controlled by it, cfg.workers at a time; a create that fails is
// retried as the Job controller would. total is t0 to the last create's
// answer.
func createGangPods(ctx context.Context, c client.Client, cfg benchConfig, job *batchv1.Job, t0 time.Time) (gangResult, error) {
	var (
		mu         sync.Mutex
		res        gangResult
		lastStart  time.Time
		lastDone   time.Time
		lastPodDur time.Duration
		failures   atomic.Int64
	)
	err := parallel(ctx, 0, cfg.gang, cfg.workers, func(ctx context.Context, i int) error {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: fmt.Sprintf("%s-%05d", job.Name, i),
			Labels:      mergeMaps(job.Spec.Template.Labels, map[string]string{"batch.kubernetes.io/job-name": job.Name, "job-name": job.Name, "batch.kubernetes.io/controller-uid": string(job.UID), "controller-uid": string(job.UID)}),
			Annotations: mergeMaps(job.Spec.Template.Annotations, nil),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
			Spec: *job.Spec.Template.Spec.DeepCopy()}
		for attempt := 0; ; attempt++ {
			start := time.Now()
			err := c.Create(ctx, p.DeepCopy())
			done := time.Now()
			if err != nil && !apierrors.IsAlreadyExists(err) {
				failures.Add(1)
				if attempt < 20 {
					continue // the Job controller retries
				}
				return fmt.Errorf("pod %s: %w", p.Name, err)
			}
			mu.Lock()
			res.admissions = append(res.admissions, done.Sub(start))
			if start.After(lastStart) {
				lastStart, lastPodDur = start, done.Sub(start)
			}
			if done.After(lastDone) {
				lastDone = done
			}
			mu.Unlock()
			return nil
		}
	})
	if err != nil {
		return res, err
	}
	res.total, res.lastPod, res.failures = lastDone.Sub(t0), lastPodDur, int(failures.Load())
	return res, nil
}

// createBareGang creates the same Job and pods with no webhook registered
// and returns the Job's create to the last pod's: the API server's own
// time, beside which the webhook's is read.
func createBareGang(t *testing.T, ctx context.Context, c client.Client, cfg benchConfig, name string) time.Duration {
	t.Helper()
	job := jobOf(name, cfg.gang)
	t0 := time.Now()
	if err := c.Create(ctx, job); err != nil {
		t.Fatalf("creating the bare gang's Job: %v", err)
	}
	res, err := createGangPods(ctx, c, cfg, job, t0)
	if err != nil {
		t.Fatalf("creating the bare gang's pods: %v", err)
	}
	if err := deleteGang(ctx, c, name); err != nil {
		t.Fatal(err)
	}
	return res.total
}

func deleteGang(ctx context.Context, c client.Client, name string) error {
	if err := c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("team-0"), client.MatchingLabels{"job-name": name},
		client.GracePeriodSeconds(0)); err != nil {
		return fmt.Errorf("unable to delete the gang's pods: %w", err)
	}
	if err := c.Delete(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "team-0", Name: name}},
		client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
		return fmt.Errorf("unable to delete the gang's Job: %w", err)
	}
	return nil
}

func mergeMaps(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// hooks registers and unregisters the webhook configurations envtest
// installed, pointing at the local serving host on the proxy's port, with
// envtest's CA.
type hooks struct {
	t          *testing.T
	c          client.Client
	mutating   []admissionregistrationv1.MutatingWebhookConfiguration
	validating []admissionregistrationv1.ValidatingWebhookConfiguration
}

func newHooks(t *testing.T, env *envtest.Env, port int) *hooks {
	h := &hooks{t: t, c: env.Client}
	var m admissionregistrationv1.MutatingWebhookConfigurationList
	var v admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := env.Client.List(context.Background(), &m); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.List(context.Background(), &v); err != nil {
		t.Fatal(err)
	}
	if len(m.Items) == 0 {
		t.Fatal("envtest installed no mutating webhook configuration")
	}
	served := ":" + strconv.Itoa(env.Environment.WebhookInstallOptions.LocalServingPort) + "/"
	proxied := ":" + strconv.Itoa(port) + "/"
	for i := range m.Items {
		for j := range m.Items[i].Webhooks {
			cc := &m.Items[i].Webhooks[j].ClientConfig
			cc.URL = ptr.To(strings.Replace(ptr.Deref(cc.URL, ""), served, proxied, 1))
		}
	}
	for i := range v.Items {
		for j := range v.Items[i].Webhooks {
			cc := &v.Items[i].Webhooks[j].ClientConfig
			cc.URL = ptr.To(strings.Replace(ptr.Deref(cc.URL, ""), served, proxied, 1))
		}
	}
	h.mutating, h.validating = m.Items, v.Items
	return h
}

func (h *hooks) unregister(ctx context.Context) {
	for i := range h.mutating {
		if err := h.c.Delete(ctx, h.mutating[i].DeepCopy()); client.IgnoreNotFound(err) != nil {
			h.t.Fatal(err)
		}
	}
	for i := range h.validating {
		if err := h.c.Delete(ctx, h.validating[i].DeepCopy()); client.IgnoreNotFound(err) != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *hooks) register(ctx context.Context) {
	for i := range h.mutating {
		m := h.mutating[i].DeepCopy()
		m.ResourceVersion, m.UID = "", ""
		if err := h.c.Create(ctx, m); err != nil {
			h.t.Fatal(err)
		}
	}
	for i := range h.validating {
		v := h.validating[i].DeepCopy()
		v.ResourceVersion, v.UID = "", ""
		if err := h.c.Create(ctx, v); err != nil {
			h.t.Fatal(err)
		}
	}
}

// lineLog keeps serve's stderr.
type lineLog struct {
	mu             sync.Mutex
	buf            bytes.Buffer
	managerStarted time.Time
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.managerStarted.IsZero() && bytes.Contains(p, []byte("Starting")) {
		l.managerStarted = time.Now()
	}
	return l.buf.Write(p)
}

// started is when serve's manager started its servers and informers (its
// first "Starting …" line).
func (l *lineLog) started() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.managerStarted
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *lineLog) tail(n int) string {
	s := l.String()
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func (l *lineLog) count(sub string) int { return strings.Count(l.String(), sub) }

// synced is how long after the cache the state synced, as serve logs it
// ("cluster state synced" with "stateBehindCache"); 0 when it does not say.
func (l *lineLog) synced() time.Duration {
	sc := bufio.NewScanner(strings.NewReader(l.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "cluster state synced") {
			continue
		}
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) == nil {
			if s, ok := entry["stateBehindCache"].(string); ok {
				d, _ := time.ParseDuration(s)
				return d
			}
		}
		if i := strings.Index(line, `"stateBehindCache": "`); i >= 0 {
			rest := line[i+len(`"stateBehindCache": "`):]
			if j := strings.Index(rest, `"`); j >= 0 {
				d, _ := time.ParseDuration(rest[:j])
				return d
			}
		}
	}
	return 0
}

// vm reads a process's VmRSS and VmHWM, in KiB.
func vm(t *testing.T, pid int) (rss, hwm int64) {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = n
		case "VmHWM:":
			hwm = n
		}
	}
	return rss, hwm
}

func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load average unknown"
	}
	f := strings.Fields(string(raw))
	return "load average " + strings.Join(f[:3], " ")
}

func percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	return s[min(int(q*float64(len(s))), len(s)-1)]
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

func adminKubeconfig(t *testing.T, env *envtest.Env) string {
	t.Helper()
	user, err := env.Environment.AddUser(crenvtest.User{Name: "mandate", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
