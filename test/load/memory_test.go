//go:build load

package load

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mandate-dev/mandate/test/fixtures"
)

// TestLargeObjectsBoundedMemory: 100 concurrent reviews of a pod with
// 10,000 containers (about 280 KiB each, the size the API server accepts)
// POSTed straight to mandate serve's /mutate: every one is answered with a
// well-formed AdmissionReview (decided, or refused with 429 by
// webhook.maxInFlightBytes), and serve's peak resident memory stays under
// the chart's memory limit.
func TestLargeObjectsBoundedMemory(t *testing.T) {
	h := start(t)
	pid := h.serve.Process.Pid
	before := vm(t, pid)
	const reviews = 100
	body := func(i int) []byte {
		containers := make([]map[string]any, 10000)
		for c := range containers {
			containers[c] = map[string]any{"name": fmt.Sprintf("c-%05d", c), "image": "registry.example/sidecar:1.0.0",
				"resources": map[string]any{"requests": map[string]any{"cpu": "1m"}}}
		}
		pod, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": fmt.Sprintf("huge-%d", i), "namespace": "team-0"},
			"spec":     map[string]any{"containers": containers}})
		require.NoError(t, err)
		review, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: types.UID(fmt.Sprintf("uid-%d", i)),
				Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
				Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
				Namespace: "team-0", Name: fmt.Sprintf("huge-%d", i), Operation: admissionv1.Create,
				Object: runtime.RawExtension{Raw: pod}},
		})
		require.NoError(t, err)
		return review
	}
	first := body(0)
	hooks := h.env.Environment.WebhookInstallOptions
	url := "https://" + net.JoinHostPort(hooks.LocalServingHost, strconv.Itoa(hooks.LocalServingPort)) + "/mutate"
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxConnsPerHost: reviews,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}} //nolint:gosec // envtest's serving certificate

	var mu sync.Mutex
	answers := map[int32]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range reviews {
		wg.Add(1)
		go func() {
			defer wg.Done()
			payload := body(i)
			<-start
			resp, err := client.Post(url, "application/json", bytes.NewReader(payload))
			require.NoError(t, err, "review %d", i)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, "review %d", i)
			var out admissionv1.AdmissionReview
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&out), "review %d", i)
			require.NotNil(t, out.Response, "review %d", i)
			require.Equal(t, types.UID(fmt.Sprintf("uid-%d", i)), out.Response.UID)
			code := int32(http.StatusOK)
			if out.Response.Result != nil && out.Response.Result.Code != 0 {
				code = out.Response.Result.Code
			}
			mu.Lock()
			answers[code]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	after := vm(t, pid)
	total := 0
	for _, n := range answers {
		total += n
	}
	fmt.Printf("memory: %d concurrent reviews of a %d KiB pod (10,000 containers): answers by code %v; serve RSS %d MiB before, peak (VmHWM) %d MiB (limit %d MiB)\n",
		reviews, len(first)>>10, answers, before["VmRSS"]>>20, after["VmHWM"]>>20, fixtures.ChartMemoryLimit>>20)
	require.Equal(t, reviews, total, "every review is answered")
	require.Less(t, after["VmHWM"], int64(fixtures.ChartMemoryLimit), "serve's peak memory stays under the chart's limit")
}

// vm reads a process's VmRSS and VmHWM (bytes) from /proc.
func vm(t *testing.T, pid int) map[string]int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		require.NoError(t, err)
		out[key] = kb << 10
	}
	return out
}
