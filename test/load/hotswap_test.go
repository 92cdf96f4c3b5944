//go:build load

package load

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/webhook"
)

// Hot-swap scenario: revisions r1..r6 differ only in the KAI queue each
// tenant's pods are sent to, "team-<i>-r<N>", so every stored pod shows
// which revision decided it.
const (
	hotSwapRevisions = 6
	// hotSwapRate creates per second are offered; the rate reached is
	// reported, not asserted (a busy machine reaches less).
	hotSwapRate     = 250
	hotSwapInterval = time.Second
	// hotSwapSlack is what a swap may take beyond one polling interval:
	// the download, compiling the bundle and its smoke decision.
	// Scaled by MANDATE_TEST_TIMEOUT_SCALE on a slow machine.
	hotSwapSlack = 1500 * time.Millisecond
	// hotSwapDwell is how long each revision stays published.
	hotSwapDwell = 3 * time.Second
)

// bundleServer serves one bundle at a time over real HTTP, with an ETag,
// answering 304 to an If-None-Match of the current one, like any bundle
// server or object store.
type bundleServer struct {
	mu   sync.Mutex
	body []byte
	etag string
	gets map[int]int // responses by status code
}

func (s *bundleServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	body, etag := s.body, s.etag
	s.mu.Unlock()
	status := http.StatusOK
	if r.Header.Get("If-None-Match") == etag {
		status = http.StatusNotModified
	}
	s.mu.Lock()
	s.gets[status]++
	s.mu.Unlock()
	w.Header().Set("ETag", etag)
	if status == http.StatusNotModified {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	_, _ = w.Write(body)
}

// publish replaces the served bundle and returns when it is served.
func (s *bundleServer) publish(revision string, body []byte) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body, s.etag = body, `"`+revision+`"`
	return time.Now()
}

// revisionQueue is the KAI queue revision r sends tenant's pods to.
func revisionQueue(tenant string, r int) string { return fmt.Sprintf("%s-r%d", tenant, r) }

// buildRevision builds bundle rN of the load model with its queues.
func buildRevision(t *testing.T, r int) []byte {
	t.Helper()
	dir := fixtures.PolicyDir(t, func(model map[string]any) {
		loadModel(model)
		for i := range tenants {
			tenant := fmt.Sprintf("team-%d", i)
			model["tenants"].(map[string]any)[tenant].(map[string]any)["queue"] = revisionQueue(tenant, r)
		}
	})
	b, err := bundles.Build(context.Background(), dir, bundles.BuildOptions{Revision: fmt.Sprintf("r%d", r)})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, bundles.Write(&buf, b))
	return buf.Bytes()
}

// TestBundleHotSwapUnderLoad: a local bundle server publishes r2..r6 while
// pods are created at a steady rate through the real API server. No create
// fails, each new revision decides within a polling interval (plus a small
// slack) of being published, without a restart, and every stored pod's
// policy-revision annotation, like its audit event's, names the revision
// whose queue it carries: the one that actually decided it.
func TestBundleHotSwapUnderLoad(t *testing.T) {
	revs := make([][]byte, hotSwapRevisions+1)
	for r := 1; r <= hotSwapRevisions; r++ {
		revs[r] = buildRevision(t, r)
	}
	bs := &bundleServer{gets: map[int]int{}}
	bs.publish("r1", revs[1])
	srv := httptest.NewServer(bs)
	t.Cleanup(srv.Close)

	h := start(t, func(o *startOptions) {
		o.envOptions = append(o.envOptions, envtest.WithAuditLog())
		o.policyArgs = []string{"--bundle", srv.URL + "/bundles/mandate.tar.gz", "--bundle-interval", hotSwapInterval.String()}
	})
	servePID := h.serve.Process.Pid

	stop := make(chan struct{})
	load := h.steadyLoad("swap", "train", hotSwapRate, 64, stop)
	published := map[string]time.Time{}
	time.Sleep(hotSwapDwell)
	for r := 2; r <= hotSwapRevisions; r++ {
		published[fmt.Sprintf("r%d", r)] = bs.publish(fmt.Sprintf("r%d", r), revs[r])
		time.Sleep(hotSwapDwell)
	}
	close(stop)
	results := load.wait()
	require.Equal(t, servePID, h.serve.Process.Pid, "no restart of mandate serve")

	sum := summarize(results)
	require.Zero(t, sum.failed, "no create may fail during the swaps; first errors: %v", sum.errs)
	rate := sum.rate
	fmt.Printf("hotswap: %d pod creates in %s (%.0f/s offered %d/s), %d failed, %d swaps; bundle server answered %v\n",
		len(results), sum.elapsed.Round(time.Millisecond), rate, hotSwapRate, sum.failed, len(published), bs.gets)
	first := map[string]time.Time{} // earliest completed create per revision
	for _, c := range results {
		if f, ok := first[c.revision]; !ok || c.end.Before(f) {
			first[c.revision] = c.end
		}
	}

	// Each revision took over within the polling interval plus the slack.
	for r := 2; r <= hotSwapRevisions; r++ {
		rev := fmt.Sprintf("r%d", r)
		f, ok := first[rev]
		require.True(t, ok, "no pod was decided by %s", rev)
		took := f.Sub(published[rev])
		limit := hotSwapInterval + envtest.Timeout(hotSwapSlack)
		fmt.Printf("hotswap: %s published, first pod decided by it %s later (limit %s)\n", rev, took.Round(time.Millisecond), limit)
		require.LessOrEqual(t, took, limit, "%s took over too late: the source is not polled every interval", rev)
	}

	// Every pod names the revision whose queue it carries, and once a
	// revision has decided, a create begun later is never decided by an
	// older one: the swap is atomic.
	revNumber := func(rev string) int {
		var n int
		_, err := fmt.Sscanf(rev, "r%d", &n)
		require.NoError(t, err, "policy revision %q", rev)
		return n
	}
	for _, c := range results {
		n := revNumber(c.revision)
		require.Equal(t, revisionQueue(c.namespace, n), c.queue,
			"%s/%s: annotated %s but carries the queue of another revision", c.namespace, c.name, c.revision)
		for r := n + 1; r <= hotSwapRevisions; r++ {
			if f, ok := first[fmt.Sprintf("r%d", r)]; ok && c.start.After(f) {
				t.Fatalf("%s/%s begun %s after r%d first decided, yet decided by %s",
					c.namespace, c.name, c.start.Sub(f), r, c.revision)
			}
		}
	}

	// The audit log names the same revision for every pod.
	annotations := auditAnnotations(t, h.env, "swap-", len(results))
	key := webhook.MutatingWebhookName + "/" + webhook.AuditPolicyRevision
	for _, c := range results {
		got, ok := annotations[c.namespace+"/"+c.name]
		require.True(t, ok, "no audit event for the create of %s/%s", c.namespace, c.name)
		require.Equal(t, c.revision, got[key], "%s/%s: audit annotation %s (event annotations %v)", c.namespace, c.name, key, got)
	}
	perRevision := map[string]int{}
	for _, c := range results {
		perRevision[c.revision]++
	}
	revisions := make([]string, 0, len(perRevision))
	for rev := range perRevision {
		revisions = append(revisions, fmt.Sprintf("%s:%d", rev, perRevision[rev]))
	}
	sort.Strings(revisions)
	fmt.Printf("hotswap: pods per revision %s; every pod's annotation, queue and audit event agree\n", strings.Join(revisions, " "))
}

// auditAnnotations reads the audit log until it holds want completed pod
// creates named with prefix, and returns their annotations by
// namespace/name.
func auditAnnotations(t *testing.T, env *envtest.Env, prefix string, want int) map[string]map[string]string {
	t.Helper()
	var got map[string]map[string]string
	deadline := time.Now().Add(envtest.Timeout(30 * time.Second))
	for {
		got = map[string]map[string]string{}
		events, err := env.AuditedCreates()
		require.NoError(t, err, "the API server's audit log")
		for _, e := range events {
			if e.ObjectRef.Resource != "pods" || !strings.HasPrefix(e.ObjectRef.Name, prefix) || e.ResponseStatus.Code != http.StatusCreated {
				continue
			}
			got[e.ObjectRef.Namespace+"/"+e.ObjectRef.Name] = e.Annotations
		}
		if len(got) >= want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(200 * time.Millisecond)
	}
}
