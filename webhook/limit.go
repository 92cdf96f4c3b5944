package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// maxRequestBytes is the largest AdmissionReview read: controller-runtime's
// own limit, above anything the API server sends.
const maxRequestBytes = 7 << 20

var shed = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "mandate_admissions_shed_total",
	Help: "Admission requests refused with 429 because the bytes of the requests being decided exceeded webhook.maxInFlightBytes.",
})

func init() { metrics.Registry.MustRegister(shed) }

// Limiter bounds the memory admission takes: the bytes of the requests being
// decided at once. A decision holds several copies of its object (decoded,
// normalised, the policy's input, the patch), so memory follows the bytes in
// flight, and a burst of the largest objects the API server accepts would
// otherwise take a replica past its container limit. A request that finds
// the budget spent waits up to Wait, then is refused with a 429 that says
// why, which the API server returns to the client (retry) instead of the
// whole replica being OOM-killed.
type Limiter struct {
	budget int64
	sem    *semaphore.Weighted
	// Wait is how long a request waits for room in the budget.
	Wait time.Duration
}

// NewLimiter returns a Limiter allowing budget bytes of requests in flight.
func NewLimiter(budget int64, wait time.Duration) *Limiter {
	return &Limiter{budget: budget, sem: semaphore.NewWeighted(budget), Wait: wait}
}

// Wrap bounds next, an admission webhook.
func (l *Limiter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		weight := r.ContentLength
		if weight <= 0 || weight > l.budget {
			// Unknown or larger than the budget: it takes all of it.
			weight = l.budget
		}
		ctx, cancel := context.WithTimeout(r.Context(), l.Wait)
		err := l.sem.Acquire(ctx, weight)
		cancel()
		if err != nil {
			shed.Inc()
			l.refuse(w, r)
			return
		}
		defer l.sem.Release(weight)
		next.ServeHTTP(w, r)
	})
}

// refuse answers an AdmissionReview denied with 429, naming the budget. Of
// the request it reads only what the answer needs (not the object: a
// refused request must not cost the memory the budget protects).
func (l *Limiter) refuse(w http.ResponseWriter, r *http.Request) {
	meta, uid, err := reviewHeader(io.LimitReader(r.Body, maxRequestBytes))
	if err != nil {
		http.Error(w, "mandate is over its admission memory budget; retry", http.StatusTooManyRequests)
		return
	}
	out := admissionv1.AdmissionReview{TypeMeta: meta, Response: &admissionv1.AdmissionResponse{
		UID:     uid,
		Allowed: false,
		Result: &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests,
			Message: fmt.Sprintf("mandate is deciding %d bytes of admissions already (webhook.maxInFlightBytes) and did not decide this one; retry",
				l.budget)},
	}}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// reviewHeader reads an AdmissionReview's apiVersion, kind and request.uid
// as a stream of tokens, stopping at the uid: the API server writes it
// first in the request, so the object after it is never read. A value
// before it is skipped whole.
func reviewHeader(body io.Reader) (metav1.TypeMeta, types.UID, error) {
	var meta metav1.TypeMeta
	dec := json.NewDecoder(body)
	str := func() (string, error) {
		tok, err := dec.Token()
		if s, ok := tok.(string); ok {
			return s, nil
		}
		return "", fmt.Errorf("want a string, got %v: %w", tok, err)
	}
	delim := func(want json.Delim) error {
		tok, err := dec.Token()
		if d, ok := tok.(json.Delim); !ok || d != want {
			return fmt.Errorf("want %v, got %v: %w", want, tok, err)
		}
		return nil
	}
	if err := delim('{'); err != nil {
		return meta, "", err
	}
	inRequest := false
	for dec.More() {
		key, err := str()
		if err != nil {
			return meta, "", err
		}
		switch {
		case !inRequest && key == "apiVersion":
			meta.APIVersion, err = str()
		case !inRequest && key == "kind":
			meta.Kind, err = str()
		case !inRequest && key == "request":
			err, inRequest = delim('{'), true
		case inRequest && key == "uid":
			uid, err := str()
			return meta, types.UID(uid), err
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return meta, "", err
		}
	}
	return meta, "", fmt.Errorf("no request.uid")
}
