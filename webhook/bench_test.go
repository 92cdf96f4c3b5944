package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/decisionlog"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// benchBody is one AdmissionReview the benchmark posts, and the answer it
// must keep getting.
type benchBody struct {
	name    string
	body    []byte
	allowed bool
}

// BenchmarkMutateHandler drives the real /mutate http.Handler
// (controller-runtime's admission.Webhook around the Mutator) with the
// AdmissionReviews of the examples' workloads, admitted and denied mixed,
// and pods of two admitted gangs, against the embedded policies and the
// example cluster, with a decision log. It reports, per review, the CPU
// and memory of decoding the review, deciding, rendering, patching,
// logging and encoding the answer: ns/op, B/op and allocs/op. Every
// answer must stay the one the first round gave.
func BenchmarkMutateHandler(b *testing.B) {
	hook, bodies := mutateBench(b)
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		cpu := processCPU(b)
		i := 0
		for b.Loop() {
			postReview(b, hook, bodies[i%len(bodies)])
			i++
		}
		reportCPU(b, cpu, i)
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		cpu := processCPU(b)
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				postReview(b, hook, bodies[i%len(bodies)])
				i++
			}
		})
		reportCPU(b, cpu, b.N)
	})
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU(b testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("unable to read the process's CPU time: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per review since since (garbage
// collection included): unlike ns/op, what other processes on a busy
// machine take does not count.
func reportCPU(b *testing.B, since time.Duration, reviews int) {
	if reviews > 0 {
		b.ReportMetric(float64(processCPU(b)-since)/float64(reviews), "cpu-ns/op")
	}
}

// mutateBench builds the /mutate webhook over the example cluster and the
// bodies it is benchmarked with, each checked once.
func mutateBench(b *testing.B) (http.Handler, []benchBody) {
	b.Helper()
	ctrllog.SetLogger(logr.Discard())
	policy, err := evaluator.LoadFS(policies.FS, "bench")
	if err != nil {
		b.Fatal(err)
	}
	// The evaluation deadline is a production safety net, not what a
	// benchmark measures: a busy machine makes the numbers slower, it must
	// not fail the run.
	ev, err := evaluator.New(context.Background(), policy, evaluator.Options{Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	state, err := cluster.New(ev.Model())
	if err != nil {
		b.Fatal(err)
	}
	if err := state.LoadFile("../examples/cluster.yaml"); err != nil {
		b.Fatal(err)
	}
	owners := &fakeOwners{objs: map[string]*unstructured.Unstructured{}}
	r := &review.Service{Decider: ev, State: state, Owners: owners}
	// As serve writes it.
	logOpts := decisionlog.DefaultOptions()
	logOpts.Queue = decisionlog.DefaultQueue
	log, err := decisionlog.New(slog.NewJSONHandler(io.Discard, nil), logOpts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(log.Close)
	seal, err := review.NewSeal()
	if err != nil {
		b.Fatal(err)
	}
	m := &Mutator{Reviewer: r, ExemptNamespaces: exempt("mandate-system"), Decisions: log, Seal: seal}
	hook := &admission.Webhook{Handler: m}

	files, err := filepath.Glob("../examples/workloads/*.yaml")
	if err != nil || len(files) == 0 {
		b.Fatalf("no example workloads: %v", err)
	}
	var bodies []benchBody
	allowed, denied := 0, 0
	for i, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		req := admissionRequest(b, admissionv1.Create, string(raw), "", "alice")
		req.UID = reviewUID(i)
		body := reviewBody(b, req)
		resp := answer(b, filepath.Base(f), serve(hook, body))
		bodies = append(bodies, benchBody{name: filepath.Base(f), body: body, allowed: resp.Allowed})
		if !resp.Allowed {
			denied++
			continue
		}
		allowed++
		obj := applyReviewPatch(b, req, resp)
		if obj.GetKind() != "Job" {
			continue
		}
		// The admitted Job as stored; two of its pods, as the Job
		// controller creates them, are the pods of a gang.
		obj.SetUID(reviewUID(100 + i))
		owners.objs["Job/"+obj.GetNamespace()+"/"+obj.GetName()] = obj
		for p := range 2 {
			pod := gangPod(obj)
			preq := admissionRequest(b, admissionv1.Create, pod, "", "system:serviceaccount:kube-system:job-controller")
			preq.UID = reviewUID(200 + 10*i + p)
			pbody := reviewBody(b, preq)
			presp := answer(b, "pod of "+obj.GetName(), serve(hook, pbody))
			if !presp.Allowed || presp.Result == nil || !strings.Contains(presp.Result.Message, "gang") {
				b.Fatalf("a pod of the admitted gang %s was not admitted as one: %+v", obj.GetName(), presp.Result)
			}
			bodies = append(bodies, benchBody{name: "pod of " + obj.GetName(), body: pbody, allowed: true})
		}
	}
	if allowed == 0 || denied == 0 {
		b.Fatalf("the examples must mix admitted and denied workloads: %d admitted, %d denied", allowed, denied)
	}
	return hook, bodies
}

func reviewUID(i int) types.UID { return types.UID(fmt.Sprintf("0b1c2d3e-0000-4000-8000-%012d", i)) }

// gangPod is a pod of job as the Job controller creates it: the template,
// owned by the job.
func gangPod(job *unstructured.Unstructured) string {
	tmpl, _, _ := unstructured.NestedMap(job.Object, "spec", "template")
	meta, _ := tmpl["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["generateName"] = job.GetName() + "-"
	meta["namespace"] = job.GetNamespace()
	meta["ownerReferences"] = []any{map[string]any{"apiVersion": "batch/v1", "kind": "Job", "name": job.GetName(),
		"uid": string(job.GetUID()), "controller": true}}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": tmpl["spec"]}
	raw, err := yaml.Marshal(pod)
	if err != nil {
		panic(err)
	}
	return string(raw)
}

// applyReviewPatch is the request's object with the answer's patch applied.
func applyReviewPatch(b testing.TB, req admission.Request, resp *admissionv1.AdmissionResponse) *unstructured.Unstructured {
	b.Helper()
	return &unstructured.Unstructured{Object: fixtures.ApplyPatch(b, req.Object.Raw, json.RawMessage(resp.Patch))}
}

// answer reads a handler's answer in full.
func answer(b testing.TB, name string, w *httptest.ResponseRecorder) *admissionv1.AdmissionResponse {
	b.Helper()
	var out admissionv1.AdmissionReview
	if w.Code != http.StatusOK {
		b.Fatalf("%s: HTTP %d: %s", name, w.Code, w.Body.String())
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.Response == nil {
		b.Fatalf("%s: unreadable answer %q: %v", name, w.Body.String(), err)
	}
	return out.Response
}

// serve posts one AdmissionReview body to the handler, as the API server
// would.
func serve(hook http.Handler, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, MutatePath, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	hook.ServeHTTP(w, r)
	return w
}

var (
	allowedTrue  = []byte(`"allowed":true`)
	allowedFalse = []byte(`"allowed":false`)
)

// postReview posts body and checks, without decoding the whole answer (the
// API server's work, not the webhook's), that it is still the first one.
func postReview(b testing.TB, hook http.Handler, body benchBody) {
	w := serve(hook, body.body)
	want := allowedFalse
	if body.allowed {
		want = allowedTrue
	}
	if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), want) {
		b.Fatalf("%s: HTTP %d, want %s: %s", body.name, w.Code, want, w.Body.String())
	}
}
