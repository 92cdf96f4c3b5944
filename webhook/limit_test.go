package webhook

import (
	"bytes"
	"encoding/json"
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

// TestLimiterShedsBeyondItsBudget: while requests holding the whole budget
// are being decided, another waits, then gets an AdmissionReview denied
// with 429 that names the budget and carries its UID; once the budget is
// free again, requests are decided.
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
		body, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: types.UID(uid),
				Object: runtime.RawExtension{Raw: []byte(`{"pad":"` + string(bytes.Repeat([]byte("x"), size)) + `"}`)}},
		})
		require.NoError(t, err)
		return httptest.NewRequest(http.MethodPost, MutatePath, bytes.NewReader(body))
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
	h.ServeHTTP(rec, review("shed", 1000))
	require.Equal(t, http.StatusOK, rec.Code, "an AdmissionReview answer, which the API server passes on")
	var out admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	require.NotNil(t, out.Response)
	assert.Equal(t, types.UID("shed"), out.Response.UID)
	assert.False(t, out.Response.Allowed)
	assert.EqualValues(t, http.StatusTooManyRequests, out.Response.Result.Code)
	assert.Contains(t, out.Response.Result.Message, "webhook.maxInFlightBytes")
	assert.Equal(t, before+1, testutil.ToFloat64(shed))

	close(release)
	decided.Wait()
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, review("after", 1000))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Empty(t, rec.Body.String(), "decided by the handler, not refused")
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
