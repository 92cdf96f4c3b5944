package webhook

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/test/reviewtest"
)

// reviewBody is an AdmissionReview as the API server POSTs it.
func reviewBody(t testing.TB, req admission.Request) []byte {
	t.Helper()
	b, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  &req.AdmissionRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// post sends body to h as the API server would and returns the status and
// the decoded response.
func post(t testing.TB, h http.Handler, body []byte, contentType string) (int, *admissionv1.AdmissionReview, error) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, MutatePath, bytes.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	// Plain JSON, not the scheme's decoder: controller-runtime echoes the
	// request's apiVersion and kind, whatever they were.
	review := &admissionv1.AdmissionReview{}
	err := json.Unmarshal(w.Body.Bytes(), review)
	return w.Code, review, err
}

// FuzzMutate posts arbitrary bodies to the /mutate webhook. Invariant: it
// never panics, and it always answers with a well-formed AdmissionReview
// whose response either allows or carries a 4xx/5xx status.
func FuzzMutate(f *testing.F) {
	r, _ := reviewtest.Service(f)
	r.Owners = &fakeOwners{}
	handlers, err := NewHandlers(HandlerOptions{Reviewer: r})
	if err != nil {
		f.Fatal(err)
	}
	h := handlers.Mutate
	for _, obj := range []string{fixtures.PlatformTooBig, fixtures.VisionSweep, llmFinetune, sweepPod} {
		f.Add(reviewBody(f, admissionRequest(f, admissionv1.Create, obj, "", "alice")), "application/json")
	}
	valid := reviewBody(f, admissionRequest(f, admissionv1.Create, fixtures.VisionSweep, "", "alice"))
	unknown := admissionRequest(f, admissionv1.Create, fixtures.VisionSweep, "", "alice")
	unknown.Kind.Group, unknown.Kind.Kind = "apps", "DaemonSet"
	f.Add(reviewBody(f, unknown), "application/json")
	f.Add(valid, "text/plain")                                                                         // wrong content type
	f.Add(valid, "")                                                                                   // none
	f.Add(valid[:len(valid)/2], "application/json")                                                    // truncated
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), "application/json") // no request
	f.Add([]byte(`{"request":{"uid":"1","kind":{"version":"v1","kind":"Pod"},"operation":"CREATE","object":[]}}`), "application/json")
	f.Add([]byte("null"), "application/json")
	f.Add([]byte{}, "application/json")
	f.Add(append(valid[:len(valid)-1:len(valid)-1], append(bytes.Repeat([]byte(" "), 1<<20), '}')...), "application/json") // large, still valid
	if fuzzing := flag.Lookup("test.fuzz"); fuzzing == nil || fuzzing.Value.String() == "" {
		// Beyond controller-runtime's 7MiB limit. Only in the seed run:
		// mutating a 7MiB input makes the fuzzer crawl.
		f.Add(bytes.Repeat([]byte("x"), 7<<20+1), "application/json")
	}

	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		code, review, err := post(t, h, body, contentType)
		if len(body) > 7<<20 {
			if review.Response == nil || review.Response.Result == nil || review.Response.Result.Code != http.StatusRequestEntityTooLarge {
				t.Fatalf("a %d-byte body: want a 413 response, got %d %+v", len(body), code, review.Response)
			}
		}
		if code >= 400 {
			return // an HTTP error is a fine answer
		}
		if err != nil {
			t.Fatalf("status %d with a body that is no AdmissionReview: %v", code, err)
		}
		resp := review.Response
		if resp == nil {
			t.Fatal("AdmissionReview without a response")
		}
		if !resp.Allowed {
			if resp.Result == nil || resp.Result.Code < 400 || resp.Result.Code > 599 {
				t.Fatalf("refusal without a 4xx/5xx status: %+v", resp.Result)
			}
		}
		if resp.Allowed && resp.Result != nil && resp.Result.Code >= 400 {
			t.Fatalf("allowed with error status %d", resp.Result.Code)
		}
		if resp.PatchType != nil && len(resp.Patch) == 0 {
			t.Fatal("patch type without a patch")
		}
	})
}

func TestMutateHTTP(t *testing.T) {
	r, _ := reviewtest.Service(t)
	handlers, err := NewHandlers(HandlerOptions{Reviewer: r})
	if err != nil {
		t.Fatal(err)
	}
	h := handlers.Mutate
	req := admissionRequest(t, admissionv1.Create, fixtures.PlatformTooBig, "", "alice")

	code, review, err := post(t, h, reviewBody(t, req), "application/json")

	if err != nil || code != http.StatusOK {
		t.Fatalf("status %d, decode: %v", code, err)
	}
	if review.Response.UID != req.UID || review.Response.Allowed || !strings.Contains(review.Response.Result.Message, "ceiling") {
		t.Fatalf("response %+v", review.Response)
	}
	_, review, _ = post(t, h, reviewBody(t, req), "text/plain")
	if review.Response == nil || review.Response.Result.Code != http.StatusBadRequest {
		t.Fatalf("wrong content type: %+v", review.Response)
	}
}
