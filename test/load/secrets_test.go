//go:build load

package load

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/test/envtest"
)

// TestNoCredentialAnywhere: mandate serve takes its bundle from a URL with
// a password and a query token, polled every second, once failing; neither
// appears in any endpoint (/healthz, /readyz, /metrics, /bundle/status) nor
// in any line serve logs.
func TestNoCredentialAnywhere(t *testing.T) {
	const password, token = "hunter2-pw", "s3cret-token"
	bs := &bundleServer{gets: map[int]int{}}
	bs.publish("r1", buildRevision(t, 1))
	var fail atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pw, ok := r.BasicAuth()
		if !ok || user != "ci" || pw != password || r.URL.Query().Get("token") != token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if fail.Load() {
			http.Error(w, "storage unavailable", http.StatusServiceUnavailable)
			return
		}
		bs.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	url := strings.Replace(srv.URL, "http://", "http://ci:"+password+"@", 1) + "/bundles/mandate.tar.gz?token=" + token
	h := start(t, func(o *startOptions) {
		o.policyArgs = []string{"--bundle", url, "--bundle-interval", "1s"}
		o.extraArgs = []string{"--decision-log-include-object"}
	})
	// A failed poll too: its error reaches the status and the log.
	fail.Store(true)
	envtest.WaitFor(t, 30*time.Second, "a failed poll in the bundle status", func() bool {
		return strings.Contains(get(t, "http://"+h.metrics+bundles.StatusPath), "503 Service Unavailable")
	})
	fail.Store(false)
	_, err := h.createPod(gpuPod("team-0", "after-polls", "train"))
	require.NoError(t, err)

	seen := map[string]string{
		"/healthz": get(t, "http://"+h.health+"/healthz"), "/readyz": get(t, "http://"+h.health+"/readyz"),
		"/metrics": get(t, "http://"+h.metrics+"/metrics"), bundles.StatusPath: get(t, "http://"+h.metrics+bundles.StatusPath),
		"serve's log": h.log(),
	}
	for where, text := range seen {
		require.NotEmpty(t, text, where)
		assert.NotContains(t, text, password, where)
		assert.NotContains(t, text, token, where)
	}
	assert.Contains(t, seen[bundles.StatusPath], "ci:REDACTED@", "the status names the source, redacted")
	fmt.Printf("secrets: bundle URL with password and token polled %v; 0 occurrences in /healthz, /readyz, /metrics (%d bytes), /bundle/status and %d bytes of log\n",
		bs.gets, len(seen["/metrics"]), len(seen["serve's log"]))
}

// get returns the body of a GET ("" when unreachable).
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}
