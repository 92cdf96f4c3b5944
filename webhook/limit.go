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
// own limit, above anything the API server sends (two objects of its 3 MiB
// request limit, the object and the old one of an update, and the rest).
const maxRequestBytes = 7 << 20

// maxHeaderBytes is the most of a refused request read to find its UID:
// the API server writes the uid first in the request, a few hundred bytes
// in; a caller that puts a large value first gets a plain HTTP error.
const maxHeaderBytes = 16 << 10

// smallRequestBytes is the largest request decided from the reserve of
// the budget kept for small ones, so ordinary pods (a few KiB) never queue
// behind the largest objects while those are decided. reserveShare is the
// reserve's share of the budget (1/8).
const (
	smallRequestBytes = 64 << 10
	reserveShare      = 8
)

var shed = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "mandate_admissions_shed_total",
	Help: "Admission requests refused with 429 because the bytes of the requests being decided exceeded webhook.maxInFlightBytes.",
})

func init() { metrics.Registry.MustRegister(shed) }

// Limiter bounds the memory admission takes: the bytes of the requests being
// decided at once. A decision holds several copies of its object (the body,
// the decoded object, the policy's input as Rego values, the patch): about
// 30 times its bytes at the largest objects, so memory follows the bytes in
// flight, and a burst of the largest objects the API server accepts would
// otherwise take a replica past its container limit. A request that finds
// the budget spent waits up to Wait, then is refused with a 429 that says
// why, which the API server returns to the client (retry) instead of the
// whole replica being OOM-killed. Requests up to smallRequestBytes draw on a
// reserve of the budget the larger ones cannot take (both waits are first
// come, first served, so a small request would otherwise wait behind every
// large one). A request larger than maxRequestBytes is refused unread
// (413). A refused request is read only as far as its UID, then discarded
// without being kept, so refusals cost no memory however many arrive.
type Limiter struct {
	budget int64
	// large is the budget less the reserve; small is the reserve.
	large, small *semaphore.Weighted
	largeCap     int64
	smallCap     int64
	// Wait is how long a request waits for room in the budget.
	Wait time.Duration
}

// NewLimiter returns a Limiter allowing budget bytes of requests in flight.
func NewLimiter(budget int64, wait time.Duration) *Limiter {
	reserve := budget / reserveShare
	return &Limiter{budget: budget, large: semaphore.NewWeighted(budget - reserve), largeCap: budget - reserve,
		small: semaphore.NewWeighted(reserve), smallCap: reserve, Wait: wait}
}

// Wrap bounds next, an admission webhook.
func (l *Limiter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > maxRequestBytes {
			l.refuse(w, r, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge,
				fmt.Sprintf("the AdmissionReview is %d bytes, more than the %d mandate reads; mandate did not decide it", r.ContentLength, maxRequestBytes))
			return
		}
		sem, weight := l.pool(r.ContentLength)
		ctx, cancel := context.WithTimeout(r.Context(), l.Wait)
		err := sem.Acquire(ctx, weight)
		cancel()
		if err != nil {
			shed.Inc()
			l.refuse(w, r, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests,
				fmt.Sprintf("mandate is deciding %d bytes of admissions already (webhook.maxInFlightBytes) and did not decide this one; retry", l.budget))
			return
		}
		defer sem.Release(weight)
		next.ServeHTTP(w, r)
	})
}

// pool is the part of the budget a request of length bytes (-1: unknown)
// draws on, and its weight there: its length, or all of the part when the
// length is unknown or larger. An empty one (answered at once: no review)
// is small.
func (l *Limiter) pool(length int64) (*semaphore.Weighted, int64) {
	if length >= 0 && length <= smallRequestBytes && length <= l.smallCap {
		return l.small, length
	}
	if length <= 0 || length > l.largeCap {
		return l.large, l.largeCap
	}
	return l.large, length
}

// refuse answers an AdmissionReview denied with code, reason and message.
// Of the request it reads only what the answer needs (not the object: a
// refused request must not cost the memory the budget protects), then
// discards the rest of a body mandate would have read, so that the caller,
// which sends the whole body before it reads an answer, gets this one and
// not a reset connection.
func (l *Limiter) refuse(w http.ResponseWriter, r *http.Request, code int32, reason metav1.StatusReason, message string) {
	meta, uid, err := reviewHeader(io.LimitReader(r.Body, maxHeaderBytes))
	if r.ContentLength <= maxRequestBytes {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxRequestBytes))
	}
	if err != nil {
		http.Error(w, message, int(code))
		return
	}
	out := admissionv1.AdmissionReview{TypeMeta: meta, Response: &admissionv1.AdmissionResponse{
		UID:     uid,
		Allowed: false,
		Result:  &metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: message},
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
