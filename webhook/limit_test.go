package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// reviewOf is an AdmissionReview whose object pads it to about size bytes.
func reviewOf(t *testing.T, uid string, size int) []byte {
	t.Helper()
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID(uid),
			Object: runtime.RawExtension{Raw: []byte(`{"pad":"` + strings.Repeat("x", size) + `"}`)}},
	})
	require.NoError(t, err)
	return body
}

// refusal decodes a limiter's answer: an AdmissionReview (HTTP 200, which
// the API server passes on) denying the request.
func refusal(t *testing.T, code int, body []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	require.Equal(t, http.StatusOK, code, "an AdmissionReview answer, which the API server passes on: %s", body)
	var out admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(body, &out))
	require.NotNil(t, out.Response)
	assert.False(t, out.Response.Allowed)
	require.NotNil(t, out.Response.Result)
	return out.Response
}

// TestLimiterShedsBeyondItsBudget: while requests holding the whole budget
// are being decided, another large one waits, then gets an AdmissionReview
// denied with 429 that names the budget and carries its UID; once the
// budget is free again, requests are decided.
func TestLimiterShedsBeyondItsBudget(t *testing.T) {
	release := make(chan struct{})
	var decided sync.WaitGroup
	entered := make(chan struct{}, 1)
	slow := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		<-release
		w.WriteHeader(http.StatusOK)
	})
	l := NewLimiter(1<<20, 50*time.Millisecond)
	h := l.Wrap(slow)
	review := func(uid string, size int) *http.Request {
		return httptest.NewRequest(http.MethodPost, MutatePath, bytes.NewReader(reviewOf(t, uid, size)))
	}

	// A request as large as the budget is being decided.
	decided.Add(1)
	go func() {
		defer decided.Done()
		h.ServeHTTP(httptest.NewRecorder(), review("big", 2<<20))
	}()
	<-entered
	before := testutil.ToFloat64(shed)

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, review("shed", 100<<10))
	out := refusal(t, rec.Code, rec.Body.Bytes())
	assert.Equal(t, types.UID("shed"), out.UID)
	assert.EqualValues(t, http.StatusTooManyRequests, out.Result.Code)
	assert.Contains(t, out.Result.Message, "webhook.maxInFlightBytes")
	assert.Equal(t, before+1, testutil.ToFloat64(shed))

	close(release)
	decided.Wait()
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, review("after", 100<<10))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Empty(t, rec.Body.String(), "decided by the handler, not refused")
}

// TestLimiterKeepsRoomForSmallRequests: while large requests take all of
// the budget they may and more wait for it, an ordinary pod's review (a
// few KiB) is decided at once, from the reserve.
func TestLimiterKeepsRoomForSmallRequests(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan string, 16)
	l := NewLimiter(1<<20, time.Second)
	h := l.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uid := r.Header.Get("X-Uid")
		entered <- uid
		if strings.HasPrefix(uid, "big") {
			<-release
		}
		w.WriteHeader(http.StatusOK)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(uid string, size int) (int, string, error) {
		var review []byte
		if size >= 0 {
			review = reviewOf(t, uid, size)
		}
		req, err := http.NewRequest(http.MethodPost, srv.URL+MutatePath, bytes.NewReader(review))
		require.NoError(t, err)
		req.Header.Set("X-Uid", uid)
		resp, err := srv.Client().Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	var wg sync.WaitGroup
	for i := range 3 {
		// The first takes the large part of the budget, the others wait.
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, _ = post(fmt.Sprintf("big-%d", i), 800<<10)
		}()
	}
	assert.Contains(t, <-entered, "big")
	for l.large.TryAcquire(0) {
		// Until the other large requests wait (with waiters, nothing is
		// acquired, not even nothing).
		time.Sleep(time.Millisecond)
	}
	code, body, err := post("pod", 4<<10)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	assert.Empty(t, body, "decided by the handler, not refused")
	select {
	case uid := <-entered:
		assert.Equal(t, "pod", uid, "the small request was decided while the large ones held or waited for the budget")
	default:
		t.Error("the small request was not decided")
	}
	// An empty request is small too (controller-runtime answers it).
	code, body, err = post("empty", -1)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	assert.Empty(t, body, "handled, not refused")
	close(release)
	wg.Wait()
}

// TestLimiterBoundsBytesInFlight: whatever the mix of sizes, the bytes of
// the requests being decided at once never exceed the budget, and every
// request is decided in the end (none waits past Wait here).
func TestLimiterBoundsBytesInFlight(t *testing.T) {
	const budget = 1 << 20
	var mu sync.Mutex
	var inFlight, peak int64
	h := NewLimiter(budget, time.Minute).Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		require.NoError(t, err)
		mu.Lock()
		inFlight += n
		peak = max(peak, inFlight)
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		inFlight -= n
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	sizes := []int{1 << 10, 5 << 10, 60 << 10, 100 << 10, 300 << 10, 700 << 10}
	var wg sync.WaitGroup
	var decided sync.Map
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := httptest.NewRecorder()
			body := reviewOf(t, fmt.Sprint(i), sizes[i%len(sizes)])
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, MutatePath, bytes.NewReader(body)))
			if rec.Code == http.StatusOK && rec.Body.Len() == 0 {
				decided.Store(i, true)
			}
		}()
	}
	wg.Wait()
	n := 0
	decided.Range(func(any, any) bool { n++; return true })
	assert.Equal(t, 60, n, "every request was decided")
	assert.Greater(t, peak, int64(0))
	assert.LessOrEqual(t, peak, int64(budget), "bytes decided at once")
}

// TestLimiterRefusesOversize: a review longer than mandate reads is
// refused without being read or decided, with a 413 that says so, and
// the budget is untouched.
func TestLimiterRefusesOversize(t *testing.T) {
	called := false
	h := NewLimiter(8<<20, time.Second).Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		called = true
		w.WriteHeader(http.StatusOK)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, MutatePath, bytes.NewReader(reviewOf(t, "huge", maxRequestBytes+1))))
	out := refusal(t, rec.Code, rec.Body.Bytes())
	assert.False(t, called, "not decided")
	assert.Equal(t, types.UID("huge"), out.UID)
	assert.EqualValues(t, http.StatusRequestEntityTooLarge, out.Result.Code)
	assert.Equal(t, metav1.StatusReasonRequestEntityTooLarge, out.Result.Reason)
	assert.Contains(t, out.Result.Message, fmt.Sprintf("more than the %d mandate reads", maxRequestBytes))
}

// TestLimiterRefusalIsDelivered: a large review refused over a real
// connection is answered with its AdmissionReview, not a connection reset
// while the caller still writes (the limiter reads the rest of what it
// would have read); a caller that puts a large value before the UID gets a
// plain 429, the value unread.
func TestLimiterRefusalIsDelivered(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	l := NewLimiter(1<<20, 20*time.Millisecond)
	srv := httptest.NewTLSServer(l.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		<-release
		w.WriteHeader(http.StatusOK)
	})))
	defer srv.Close()
	defer close(release)
	go func() {
		resp, err := srv.Client().Post(srv.URL, "application/json", bytes.NewReader(reviewOf(t, "holder", 900<<10)))
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	for range 5 {
		resp, err := srv.Client().Post(srv.URL, "application/json", bytes.NewReader(reviewOf(t, "shed", 6<<20)))
		require.NoError(t, err, "answered, not reset")
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		out := refusal(t, resp.StatusCode, body)
		assert.Equal(t, types.UID("shed"), out.UID)
		assert.EqualValues(t, http.StatusTooManyRequests, out.Result.Code)
	}

	forged := `{"request":{"object":{"pad":"` + strings.Repeat("x", 1<<20) + `"},"uid":"late"}}`
	resp, err := srv.Client().Post(srv.URL, "application/json", strings.NewReader(forged))
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Contains(t, string(body), "webhook.maxInFlightBytes")
}

// TestReviewHeader: the UID is found wherever it sits in the request, the
// values before it skipped, and a review without one is an error.
func TestReviewHeader(t *testing.T) {
	meta, uid, err := reviewHeader(strings.NewReader(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1",` +
		`"request":{"kind":{"kind":"Pod"},"object":{"spec":{"containers":[{"name":"c"}]}},"uid":"u-1","name":"p"}}`))
	require.NoError(t, err)
	assert.Equal(t, types.UID("u-1"), uid)
	assert.Equal(t, "AdmissionReview", meta.Kind)
	assert.Equal(t, "admission.k8s.io/v1", meta.APIVersion)
	for _, bad := range []string{`{"request":{"name":"p"}}`, `[]`, `{"request":{"uid":7}}`, `{"kind":`} {
		_, _, err := reviewHeader(strings.NewReader(bad))
		assert.Error(t, err, bad)
	}
}
