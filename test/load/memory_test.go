//go:build load

package load

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mandate-dev/mandate/certs"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// TestLargeObjectsBoundedMemory: 200 concurrent reviews of a pod with
// 10,000 containers (fixtures.LargePodReview, about 1 MiB each, within the
// 3 MiB the API server accepts), POSTed straight to one mandate serve run
// as the chart runs it (its GOMEMLIMIT; a client certificate required, the
// API server's presented): every one is answered with a well-formed
// AdmissionReview (decided, or refused with 429 by
// webhook.maxInFlightBytes or 500 at the evaluation's deadline), and
// serve's peak resident memory stays under the chart's memory limit.
// test/chart's TestInstall checks the same through the rendered chart;
// this one holds quota (no dry run) and prints the numbers.
func TestLargeObjectsBoundedMemory(t *testing.T) {
	h := start(t, func(o *startOptions) {
		o.clientCert = true
		o.environ = []string{"GOMEMLIMIT=" + strconv.Itoa(fixtures.ChartGoMemLimit)}
	})
	pid := h.serve.Process.Pid
	before, _, err := fixtures.ProcessMemory(pid)
	require.NoError(t, err)
	const reviews = 200
	uid := func(i int) string { return fmt.Sprintf("huge-%03d", i) }
	bodies := make([][]byte, reviews)
	for i := range bodies {
		bodies[i] = fixtures.LargePodReview(t, "team-0", uid(i), false)
	}
	hooks := h.env.Environment.WebhookInstallOptions
	url := "https://" + net.JoinHostPort(hooks.LocalServingHost, strconv.Itoa(hooks.LocalServingPort)) + "/mutate"
	cert, err := certs.IssueClient(h.env.WebhookClientCA, envtest.WebhookClientCN, time.Now(), time.Hour)
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
	require.NoError(t, err)
	client := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{MaxConnsPerHost: reviews,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12, //nolint:gosec // envtest's serving certificate
			Certificates: []tls.Certificate{pair}}}}

	var mu sync.Mutex
	answers := map[int32]int{}
	var wg sync.WaitGroup
	burst := make(chan struct{})
	for i, body := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-burst
			resp, err := client.Post(url, "application/json", bytes.NewReader(body))
			if !assert.NoError(t, err, "review %d is answered", i) {
				return
			}
			defer resp.Body.Close()
			var out admissionv1.AdmissionReview
			if !assert.Equal(t, http.StatusOK, resp.StatusCode, "review %d", i) ||
				!assert.NoError(t, json.NewDecoder(resp.Body).Decode(&out), "review %d", i) || !assert.NotNil(t, out.Response, "review %d", i) {
				return
			}
			assert.Equal(t, types.UID(uid(i)), out.Response.UID)
			code := int32(http.StatusOK)
			if out.Response.Result != nil && out.Response.Result.Code != 0 {
				code = out.Response.Result.Code
			}
			mu.Lock()
			answers[code]++
			mu.Unlock()
		}()
	}
	began := time.Now()
	close(burst)
	wg.Wait()
	took := time.Since(began)
	_, peak, err := fixtures.ProcessMemory(pid)
	require.NoError(t, err)
	total := 0
	for _, n := range answers {
		total += n
	}
	fmt.Printf("memory: %d concurrent reviews of a %d KiB pod (%d containers) in %s: answers by code %v; serve RSS %d MiB before, peak (VmHWM) %d MiB (limit %d MiB)\n",
		reviews, len(bodies[0])>>10, fixtures.LargeContainers, took.Round(time.Millisecond), answers, before>>20, peak>>20, fixtures.ChartMemoryLimit>>20)
	require.Equal(t, reviews, total, "every review is answered")
	require.Less(t, peak, int64(fixtures.ChartMemoryLimit), "serve's peak memory stays under the chart's limit")
}
