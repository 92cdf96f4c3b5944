package cli

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeAnswersHealthWhileFetchingTheFirstBundle: while the bundle
// server hangs, /healthz answers 200 and /readyz 503 from the first moment,
// so a liveness probe does not restart the replica; when the source then
// fails and nothing is persisted, serve exits naming the key — and neither
// the health answers nor the error carry the URL's credentials.
func TestServeAnswersHealthWhileFetchingTheFirstBundle(t *testing.T) {
	const password, token = "hunter2-pw", "s3cret-token"
	release := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		<-release
		http.Error(w, "gone", http.StatusInternalServerError)
	}))
	defer hanging.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	healthAddr := l.Addr().String()
	require.NoError(t, l.Close())
	url := strings.Replace(hanging.URL, "http://", "http://ci:"+password+"@", 1) + "/b.tar.gz?token=" + token

	type result struct {
		code    int
		errText string
	}
	done := make(chan result, 1)
	go func() {
		code, _, errText := run(t, "serve", "--kubeconfig", unreachableKubeconfig(t), "--health-addr", healthAddr,
			"--metrics-addr", "0", "--bundle", url)
		done <- result{code, errText}
	}()

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + healthAddr + path)
		if err != nil {
			return 0, ""
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	deadline := time.Now().Add(time.Minute)
	for code, _ := get("/healthz"); code != http.StatusOK; code, _ = get("/healthz") {
		require.True(t, time.Now().Before(deadline), "/healthz never answered while the first bundle was fetched")
		time.Sleep(20 * time.Millisecond)
	}
	code, body := get("/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code, "not ready before a policy is active")
	assert.Contains(t, body, "fetching the first policy bundle")

	close(release)
	r := <-done
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.errText, "bundle.source: unable to fetch bundle")
	for _, secret := range []string{password, token} {
		assert.NotContains(t, r.errText, secret)
		assert.NotContains(t, body, secret)
	}
	assert.Contains(t, r.errText, fmt.Sprintf("ci:REDACTED@%s", strings.TrimPrefix(hanging.URL, "http://")))
}
