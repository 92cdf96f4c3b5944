package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/test/envtest"
)

// platformQuota sets tenant platform's nvidia.com/gpu quota.
func platformQuota(guaranteed, ceiling int) func(model map[string]any) {
	return func(model map[string]any) {
		setQuota(model["tenants"].(map[string]any), "platform", guaranteed, ceiling)
	}
}

// setQuota sets tenant's nvidia.com/gpu quota in the model's tenants.
func setQuota(tenants map[string]any, tenant string, guaranteed, ceiling int) {
	quota := tenants[tenant].(map[string]any)["quota"].(map[string]any)
	quota["nvidia.com/gpu"] = map[string]any{"guaranteed": guaranteed, "ceiling": ceiling}
}

// raceOutcome is how the racing creates were decided, by namespace.
type raceOutcome struct {
	elapsed                             time.Duration
	nonPreemptible, preemptible, denied map[string]int
}

// raceCreates creates pods with workers concurrent callers and sorts the
// outcomes; an error other than a denial over the guarantee fails t.
func (s *suite) raceCreates(t *testing.T, pods []*corev1.Pod, workers int) raceOutcome {
	t.Helper()
	out := raceOutcome{nonPreemptible: map[string]int{}, preemptible: map[string]int{}, denied: map[string]int{}}
	var mu sync.Mutex
	var unexpected []string
	jobs := make(chan *corev1.Pod)
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pod := range jobs {
				ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(60*time.Second))
				err := s.env.Client.Create(ctx, pod)
				cancel()
				mu.Lock()
				switch {
				case err == nil && pod.Labels[ledger.LabelPreemptible] == "false":
					out.nonPreemptible[pod.Namespace]++
				case err == nil && pod.Labels[ledger.LabelPreemptible] == "true":
					out.preemptible[pod.Namespace]++
				case err == nil:
					unexpected = append(unexpected, fmt.Sprintf("%s/%s admitted without %s", pod.Namespace, pod.Name, ledger.LabelPreemptible))
				case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "may only use guaranteed GPUs"):
					out.denied[pod.Namespace]++
				default:
					unexpected = append(unexpected, fmt.Sprintf("%s/%s: %v", pod.Namespace, pod.Name, err))
				}
				mu.Unlock()
			}
		}()
	}
	for _, p := range pods {
		jobs <- p
	}
	close(jobs)
	wg.Wait()
	out.elapsed = time.Since(start)
	if len(unexpected) > 0 {
		t.Errorf("%d of %d creates neither admitted with a decision nor denied over the guarantee; the first: %s",
			len(unexpected), len(pods), strings.Join(unexpected[:min(5, len(unexpected))], "; "))
	}
	return out
}

// storedNonPreemptibleGPUs is how many GPUs the workloads of namespace ns
// that the API server stores hold as non-preemptible work: its bare pods
// and its Jobs (by parallelism), as labelled at admission.
func (s *suite) storedNonPreemptibleGPUs(t *testing.T, ns string) int {
	t.Helper()
	ctx := context.Background()
	var pods corev1.PodList
	if err := s.env.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if len(p.OwnerReferences) > 0 || p.Labels[ledger.LabelPreemptible] != "false" {
			continue
		}
		for _, c := range p.Spec.Containers {
			gpus := c.Resources.Limits["nvidia.com/gpu"]
			n += int(gpus.Value())
		}
	}
	var jobs batchv1.JobList
	if err := s.env.Client.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs.Items {
		if j.Spec.Template.Labels[ledger.LabelPreemptible] != "false" || j.Spec.Parallelism == nil {
			continue
		}
		for _, c := range j.Spec.Template.Spec.Containers {
			gpus := c.Resources.Limits["nvidia.com/gpu"]
			n += int(*j.Spec.Parallelism) * int(gpus.Value())
		}
	}
	return n
}

// routeTo sends the API server's webhook calls to the given replicas
// alone (by index), from the next call on.
func (s *suite) routeTo(replicas ...int) {
	var backends []string
	for _, i := range replicas {
		backends = append(backends, s.backends[i])
	}
	s.proxy.Serve(backends)
	s.proxy.Rotate()
}

// grantLine is one line of a TenantLedger's spec.grants: HOLDER TENANT
// EXPIRES KEY=TOTAL/NONPREEMPTIBLE[,...], EXPIRES in unix seconds (what
// follows, such as when the holder answered a reclaim, is not read here).
type grantLine struct {
	Holder, Tenant string
	Expires        time.Time
	GPUs           map[string]ledger.Usage
}

// grants are the grant lines of every TenantLedger.
func (s *suite) grants(t *testing.T) []grantLine {
	t.Helper()
	ledgers, err := envtest.TenantLedgers(context.Background(), s.env.Client)
	if err != nil {
		t.Fatal(err)
	}
	var out []grantLine
	for i := range ledgers {
		text, _, _ := unstructured.NestedString(ledgers[i].Object, "spec", "grants")
		for _, line := range strings.Split(text, "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			g, err := parseGrantLine(line)
			if err != nil {
				t.Fatalf("TenantLedger %s: %v", ledgers[i].GetName(), err)
			}
			out = append(out, g)
		}
	}
	return out
}

// grantOf is holder's grant line of tenant and whether there is one.
func (s *suite) grantOf(t *testing.T, holder, tenant string) (grantLine, bool) {
	t.Helper()
	for _, g := range s.grants(t) {
		if g.Holder == holder && g.Tenant == tenant {
			return g, true
		}
	}
	return grantLine{}, false
}

// waitGrant waits until holder's grant of tenant (taken after an
// admission, in the background) holds at least gpus nvidia.com/gpu as
// non-preemptible work, and returns it.
func (s *suite) waitGrant(t *testing.T, holder, tenant string, gpus int) grantLine {
	t.Helper()
	var g grantLine
	deadline := time.Now().Add(envtest.Timeout(30 * time.Second))
	for {
		var ok bool
		if g, ok = s.grantOf(t, holder, tenant); ok && g.GPUs["nvidia.com/gpu"].NonPreemptible >= gpus {
			return g
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds no grant of %d non-preemptible nvidia.com/gpu of %s (the test's premise); every grant: %v", holder, gpus, tenant, s.grants(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func parseGrantLine(line string) (grantLine, error) {
	f := strings.Fields(line)
	if len(f) < 4 {
		return grantLine{}, fmt.Errorf("grant line %q: want HOLDER TENANT EXPIRES KEY=TOTAL/NONPREEMPTIBLE[,...]", line)
	}
	expires, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return grantLine{}, fmt.Errorf("grant line %q: expiry: %w", line, err)
	}
	g := grantLine{Holder: f[0], Tenant: f[1], Expires: time.Unix(expires, 0), GPUs: map[string]ledger.Usage{}}
	for _, kv := range strings.Split(f[3], ",") {
		i := strings.LastIndex(kv, "=")
		total, np, ok := strings.Cut(kv[i+1:], "/")
		if i < 0 || !ok {
			return grantLine{}, fmt.Errorf("grant line %q: %q is not KEY=TOTAL/NONPREEMPTIBLE", line, kv)
		}
		var u ledger.Usage
		if u.Total, err = strconv.Atoi(total); err == nil {
			u.NonPreemptible, err = strconv.Atoi(np)
		}
		if err != nil {
			return grantLine{}, fmt.Errorf("grant line %q: %w", line, err)
		}
		g.GPUs[kv[:i]] = u
	}
	return g, nil
}

// grantSpends reads mandate_quota_grant_decisions_total by path (grant,
// pool, reclaim, given_back), summed over the in-process replicas.
func grantSpends(t *testing.T) map[string]float64 {
	return counterByLabel(t, "mandate_quota_grant_decisions_total", "path")
}

// ledgerCommits reads mandate_quota_ledger_commits_total by result.
func ledgerCommits(t *testing.T) map[string]float64 {
	return counterByLabel(t, "mandate_quota_ledger_commits_total", "result")
}

// counterByLabel sums the counter name of the process's registry by the
// value of its label.
func counterByLabel(t *testing.T, name, label string) map[string]float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// growth is after − before, per key (what is unchanged left out).
func growth(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
