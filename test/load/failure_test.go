//go:build load

package load

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/webhook"
)

// Failure behaviour: what the API server does when Mandate is down, slow,
// or cut off from the API server, with each failurePolicy. The error texts
// printed here are quoted in docs/failure-behaviour.md.

// createPod creates pod for real and returns the stored object.
func (h *harness) createPod(pod *corev1.Pod) (*corev1.Pod, error) {
	pod = pod.DeepCopy()
	ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(10*time.Second))
	defer cancel()
	return pod, h.env.Client.Create(ctx, pod)
}

// decided says whether Mandate decided the stored pod.
func decided(p *corev1.Pod) bool {
	_, marked := p.Annotations[scheduler.AnnotationDirectives]
	return marked && p.Annotations[review.AnnotationPolicyRevision] != ""
}

// ensureNamespace creates a namespace if it does not exist yet.
func (h *harness) ensureNamespace(name string, labels map[string]string) error {
	err := h.env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		return err
	}
	return nil
}

// TestFailurePolicyFail: with failurePolicy Fail and mandate serve down,
// a governed create fails with the API server's "failed calling webhook",
// and so does labelling a namespace with a tenant; creates in the system
// namespaces and in Mandate's own still succeed. Once serve is back,
// creates are decided again.
func TestFailurePolicyFail(t *testing.T) {
	h := start(t)
	require.NoError(t, h.ensureNamespace(mandateNamespace, nil))
	h.kill()

	_, err := h.createPod(gpuPod("team-0", "fail-down", "build"))
	require.Error(t, err, "a governed create must fail while Mandate is down")
	require.ErrorContains(t, err, `failed calling webhook "`+webhook.MutatingWebhookName+`"`)
	fmt.Printf("failure: Fail, serve down, governed pod: %v\n", err)

	err = h.env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: "fail-tenant", Labels: map[string]string{"mandate.dev/tenant": "team-1"}}})
	require.ErrorContains(t, err, `failed calling webhook "`+webhook.NamespaceWebhookName+`"`)
	fmt.Printf("failure: Fail, serve down, namespace with a tenant label: %v\n", err)
	require.NoError(t, h.ensureNamespace("fail-plain", nil), "a namespace without a tenant label is not sent to Mandate")

	for _, ns := range append(append([]string{}, review.SystemNamespaces[:1]...), mandateNamespace) {
		p, err := h.createPod(gpuPod(ns, "fail-down", "build"))
		require.NoError(t, err, "Mandate never blocks %s", ns)
		require.False(t, decided(p), "%s is not governed", ns)
	}
	fmt.Printf("failure: Fail, serve down: pods in kube-system and %s created\n", mandateNamespace)

	rejected, err := h.apiServerCounter("apiserver_admission_webhook_rejection_count",
		`name="`+webhook.MutatingWebhookName+`"`, `error_type="calling_webhook_error"`)
	require.NoError(t, err)
	require.GreaterOrEqual(t, rejected, 1.0, "the API server counts the failed call")
	fmt.Printf("failure: Fail, serve down: apiserver_admission_webhook_rejection_count{name=%q,error_type=\"calling_webhook_error\"} %.0f\n",
		webhook.MutatingWebhookName, rejected)

	h.startServe()
	h.waitReady(30 * time.Second)
	p, err := h.createPod(gpuPod("team-0", "fail-back", "build"))
	require.NoError(t, err)
	require.True(t, decided(p), "decided once serve is back")
}

// TestFailurePolicyIgnore: with failurePolicy Ignore and mandate serve
// down, a governed create is admitted unmutated: no directives, no policy
// revision, no queue. The validating backstop runs in the same process, so
// it is down too and cannot catch it.
func TestFailurePolicyIgnore(t *testing.T) {
	h := start(t, func(o *startOptions) { o.failurePolicy = ptr.To(admissionregistrationv1.Ignore) })
	h.kill()

	p, err := h.createPod(gpuPod("team-0", "ignore-down", "build"))
	require.NoError(t, err, "Ignore admits while Mandate is down")
	require.False(t, decided(p), "admitted without a decision")
	require.NotContains(t, p.Labels, scheduler.LabelKAIQueue, "no scheduling directives")
	require.NotEqual(t, scheduler.KAISchedulerName, p.Spec.SchedulerName, "no scheduler assigned")
	fmt.Printf("failure: Ignore, serve down: pod admitted undecided (annotations %v, schedulerName %q)\n", p.Annotations, p.Spec.SchedulerName)

	failOpen, err := h.apiServerCounter("apiserver_admission_webhook_fail_open_count", `name="`+webhook.MutatingWebhookName+`"`)
	require.NoError(t, err)
	require.GreaterOrEqual(t, failOpen, 1.0, "the API server counts the call it ignored")
	backstop, err := h.apiServerCounter("apiserver_admission_webhook_fail_open_count", `name="`+webhook.ValidatingWebhookName+`"`)
	require.NoError(t, err)
	require.GreaterOrEqual(t, backstop, 1.0, "the validating backstop was skipped too")
	fmt.Printf("failure: Ignore, serve down: apiserver_admission_webhook_fail_open_count mutate %.0f, validate %.0f\n", failOpen, backstop)

	h.startServe()
	h.waitReady(30 * time.Second)
	p, err = h.createPod(gpuPod("team-0", "ignore-back", "build"))
	require.NoError(t, err)
	require.True(t, decided(p), "decided once serve is back")
}

// slowRule is a policy rule no deadline lets finish, for the workloads
// labelled mandate-test/slow only: about nine million iterations.
const slowRule = `package mandate.tenancy

deny contains {"dimension": "tenancy", "code": "slow", "message": "never produced"} if {
	input.workload.labels["mandate-test/slow"] == "true"
	count([1 |
		some i in numbers.range(1, 3000)
		some j in numbers.range(1, 3000)
		i == j + 5000
	]) > 0
}
`

// TestFailureEvaluationTimeout: an evaluation past --evaluation-timeout
// fails the create with a message naming the deadline and the revision,
// well within the webhook's timeoutSeconds; other creates are decided as
// usual and mandate serve stays ready.
func TestFailureEvaluationTimeout(t *testing.T) {
	const evalTimeout = 100 * time.Millisecond
	dir := loadPolicies(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mandate", "tenancy", "slow_fixture.rego"), []byte(slowRule), 0o600))
	h := start(t, func(o *startOptions) {
		o.policiesDir = dir
		o.extraArgs = []string{"--evaluation-timeout", evalTimeout.String()}
	})

	slow := gpuPod("team-0", "slow", "build")
	slow.Labels = map[string]string{"mandate-test/slow": "true"}
	began := time.Now()
	_, err := h.createPod(slow)
	took := time.Since(began)
	require.Error(t, err, "a create whose evaluation times out must fail under Fail")
	// Mandate's own deadline answered (its message), not the API server's
	// webhook timeout.
	require.ErrorContains(t, err, "policy evaluation exceeded its deadline ("+evalTimeout.String())
	fmt.Printf("failure: evaluation timeout %s: create failed after %s: %v\n", evalTimeout, took.Round(time.Millisecond), err)

	p, err := h.createPod(gpuPod("team-0", "not-slow", "build"))
	require.NoError(t, err)
	require.True(t, decided(p), "other creates are decided")

	resp, err := http.Get("http://" + h.health + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "a timed-out evaluation does not make mandate serve unready")
	errors, err := h.counter("mandate_admissions_total", `webhook="mutate"`, `outcome="error"`, `code="500"`)
	require.NoError(t, err)
	require.GreaterOrEqual(t, errors, 1.0, "the timeout is counted as an error")
	h.mu.Lock()
	log := h.serveLog.String()
	h.mu.Unlock()
	require.Contains(t, log, "policy evaluation exceeded its deadline", "the timeout is logged")
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "exceeded its deadline") {
			fmt.Printf("failure: evaluation timeout: serve logged %s\n", line)
			break
		}
	}
	fmt.Printf("failure: evaluation timeout: /readyz 200, mandate_admissions_total{webhook=mutate,outcome=error,code=500} %.0f\n", errors)
}

// TestFailureAPIServerRestart: the API server goes away for a few seconds
// and comes back (same etcd, same address). mandate serve keeps running
// and ready, its informers re-list and watch again, and a namespace
// created after the restart is known to it: its pods are decided for its
// tenant without restarting serve.
func TestFailureAPIServerRestart(t *testing.T) {
	h := start(t, func(o *startOptions) { o.envOptions = append(o.envOptions, envtest.WithRestartableAPIServer()) })
	pid := h.serve.Process.Pid

	const down = 5 * time.Second
	restarted := make(chan error, 1)
	go func() { restarted <- h.env.RestartAPIServer(down) }()
	time.Sleep(down / 2)
	require.NoError(t, syscall.Kill(pid, 0), "mandate serve did not exit while the API server was away")
	resp, err := http.Get("http://" + h.health + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "mandate serve stays ready while the API server is away")
	require.NoError(t, <-restarted)
	returned := time.Now()
	require.NoError(t, syscall.Kill(pid, 0), "mandate serve did not exit while the API server was away")
	require.Equal(t, pid, h.serve.Process.Pid)

	// The tenant guard answers again, and a pod in a namespace created now
	// is decided for its tenant at once, though the informers are still
	// backing off: Mandate reads a namespace it has not seen from the API
	// server rather than taking it for a tenant-less one.
	require.NoError(t, h.ensureNamespace("late", map[string]string{"mandate.dev/tenant": "team-3"}))
	p, err := h.createPod(gpuPod("late", "after", "build"))
	require.NoError(t, err)
	require.True(t, decided(p), "decided after the restart")
	require.Equal(t, "team-3", p.Labels[scheduler.LabelKAIQueue], "decided for the new namespace's tenant")
	decidedAfter := time.Since(returned)
	resp, err = http.Get("http://" + h.health + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	fmt.Printf("failure: API server down %s: serve kept running and ready (pid %d); a pod in a namespace created after the restart decided for its tenant %s after the API server returned\n",
		down, pid, decidedAfter.Round(time.Millisecond))
}

// counter sums the samples of one of mandate serve's metrics whose
// labels contain every match.
func (h *harness) counter(name string, match ...string) (float64, error) {
	resp, err := http.Get("http://" + h.metrics + "/metrics")
	if err != nil {
		return 0, fmt.Errorf("unable to read /metrics: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("unable to read /metrics: %w", err)
	}
	return sumSamples(raw, name, match...)
}

// apiServerCounter is counter for the API server's own metrics.
func (h *harness) apiServerCounter(name string, match ...string) (float64, error) {
	cs, err := kubernetes.NewForConfig(h.env.Config)
	if err != nil {
		return 0, fmt.Errorf("unable to build a clientset: %w", err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		return 0, fmt.Errorf("unable to read the API server's /metrics: %w", err)
	}
	return sumSamples(raw, name, match...)
}

// sumSamples sums, in a Prometheus text exposition, the samples of a metric
// whose labels contain every match.
func sumSamples(raw []byte, name string, match ...string) (float64, error) {
	sum := 0.0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
lines:
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		for _, m := range match {
			if !strings.Contains(line, m) {
				continue lines
			}
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("metric line %q: %w", line, err)
		}
		sum += v
	}
	return sum, sc.Err()
}
