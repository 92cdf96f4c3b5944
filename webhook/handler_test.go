package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/test/reviewtest"
	"github.com/mandate-dev/mandate/workload"
)

// llmFinetune needs 64 GPUs in one leaf block; the only one has a busy
// node, so it is admitted and waits, with a warning.
var llmFinetune = fixtures.LLMFinetune(7)

// Fixtures, after examples/workloads.
const (
	// A pod of the vit-sweep Job, as the Job controller creates it.
	sweepPod = `
apiVersion: v1
kind: Pod
metadata:
  generateName: vit-sweep-
  namespace: vision
  labels: {mandate.dev/class: training}
  ownerReferences:
  - {apiVersion: batch/v1, kind: Job, name: vit-sweep, uid: 7c1d3e4f-0000-4000-8000-00000000000a, controller: true}
spec:
  restartPolicy: Never
  containers:
  - name: train
    image: vit
    resources: {limits: {nvidia.com/gpu: "4"}}
`
)

// applyPatch applies a response's patch to the request's object.
func applyPatch(t *testing.T, req admission.Request, resp admission.Response) *unstructured.Unstructured {
	t.Helper()
	return &unstructured.Unstructured{Object: fixtures.ApplyPatch(t, req.Object.Raw, json.RawMessage(resp.Patch))}
}

func nestedString(t *testing.T, obj *unstructured.Unstructured, fields ...string) string {
	t.Helper()
	v, _, err := unstructured.NestedString(obj.Object, fields...)
	require.NoError(t, err)
	return v
}

func TestMutatorDenies(t *testing.T) {
	r, _ := reviewtest.Service(t)
	m := &Mutator{Reviewer: r}
	req := admissionRequest(t, admissionv1.Create, fixtures.PlatformTooBig, "", "alice", "platform-devs")

	resp := m.Handle(context.Background(), req)

	require.False(t, resp.Allowed)
	require.NotNil(t, resp.Result)
	assert.EqualValues(t, http.StatusForbidden, resp.Result.Code)
	assert.Contains(t, resp.Result.Message, "ceiling")
	assert.Contains(t, resp.Result.Message, "16")
	assert.Contains(t, string(resp.Result.Reason), "quota")
	require.NotNil(t, resp.Result.Details)
	assert.NotEmpty(t, resp.Result.Details.Causes)
	assert.Empty(t, resp.Patch)
	// The client sees a Forbidden error.
	assert.True(t, apierrors.IsForbidden(&apierrors.StatusError{ErrStatus: *resp.Result}))
}

func TestMutatorPatches(t *testing.T) {
	r, rec := reviewtest.Service(t)
	m := &Mutator{Reviewer: r}
	req := admissionRequest(t, admissionv1.Create, fixtures.VisionSweep, "", "bob", "vision-devs")

	resp := m.Handle(context.Background(), req)

	require.True(t, resp.Allowed, "result: %+v", resp.Result)
	require.NotEmpty(t, resp.Patch)
	require.NotNil(t, resp.PatchType)
	assert.Equal(t, admissionv1.PatchTypeJSONPatch, *resp.PatchType)
	got := applyPatch(t, req, resp)
	assert.Equal(t, "volcano", nestedString(t, got, "spec", "template", "spec", "schedulerName"))
	assert.Equal(t, "research-vision", got.GetAnnotations()["scheduling.volcano.sh/queue-name"]+
		nestedString(t, got, "spec", "template", "metadata", "annotations", "scheduling.volcano.sh/queue-name"))
	assert.Contains(t, got.GetAnnotations(), scheduler.AnnotationDirectives)
	assert.NotEmpty(t, resp.AuditAnnotations[AuditDecisionID])
	assert.Equal(t, "embedded", resp.AuditAnnotations[AuditPolicyRevision])
	// The evaluator saw the request's essentials.
	assert.Equal(t, evaluator.Request{Operation: "CREATE", User: "bob", Groups: []string{"vision-devs"}, UID: string(req.UID)}, rec.Last().Request)
}

func TestMutatorWarns(t *testing.T) {
	r, _ := reviewtest.Service(t)
	m := &Mutator{Reviewer: r}
	req := admissionRequest(t, admissionv1.Create, llmFinetune, "", "carol")
	want, err := r.Review(context.Background(), reviewtest.Object(t, llmFinetune), requestOf(req).Request)
	require.NoError(t, err)
	require.NotEmpty(t, want.Decision.Warnings, "the fixture must wait for capacity")

	resp := m.Handle(context.Background(), req)

	require.True(t, resp.Allowed, "result: %+v", resp.Result)
	assert.Equal(t, want.Decision.Warnings, resp.Warnings)
	got := applyPatch(t, req, resp)
	assert.Equal(t, "volcano", nestedString(t, got, "spec", "pytorchReplicaSpecs", "Worker", "template", "spec", "schedulerName"))
}

func TestMutatorDryRun(t *testing.T) {
	r, rec := reviewtest.Service(t)
	m := &Mutator{Reviewer: r}
	req := admissionRequest(t, admissionv1.Create, fixtures.VisionSweep, "", "bob")
	req.DryRun = ptr.To(true)

	resp := m.Handle(context.Background(), req)

	require.True(t, resp.Allowed)
	assert.NotEmpty(t, resp.Patch, "a dry run is answered exactly like the real create")
	assert.True(t, rec.Last().Request.DryRun)
}

// fakeOwners serves owners from a map, or fails with err.
type fakeOwners struct {
	objs map[string]*unstructured.Unstructured
	err  error
}

func (f *fakeOwners) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if f.err != nil {
		return f.err
	}
	u := obj.(*unstructured.Unstructured)
	o, ok := f.objs[u.GetKind()+"/"+key.String()]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: u.GetKind()}, key.Name)
	}
	o.DeepCopyInto(u)
	return nil
}

// admittedOwner returns the vit-sweep Job as the mutating webhook stored it.
func admittedOwner(t *testing.T, m *Mutator) *unstructured.Unstructured {
	t.Helper()
	req := admissionRequest(t, admissionv1.Create, fixtures.VisionSweep, "", "bob")
	resp := m.Handle(context.Background(), req)
	require.True(t, resp.Allowed)
	job := applyPatch(t, req, resp)
	job.SetUID("7c1d3e4f-0000-4000-8000-00000000000a")
	return job
}

func TestMutatorGangPod(t *testing.T) {
	r, rec := reviewtest.Service(t)
	m := &Mutator{Reviewer: r}
	job := admittedOwner(t, m)
	d, _, err := scheduler.RecordedDirectives(job.GetAnnotations())
	require.NoError(t, err)
	jobWorkload, err := workload.Normalize(job)
	require.NoError(t, err)

	for _, tc := range []struct {
		name        string
		owners      *fakeOwners
		wantDecided bool
		wantCode    int32
	}{
		{name: "owner admitted: directives applied, not decided again",
			owners: &fakeOwners{objs: map[string]*unstructured.Unstructured{"Job/vision/vit-sweep": job}}},
		{name: "owner unknown: decided",
			owners: &fakeOwners{objs: map[string]*unstructured.Unstructured{}}, wantDecided: true},
		{name: "owner replaced (other UID): decided", wantDecided: true,
			owners: &fakeOwners{objs: map[string]*unstructured.Unstructured{"Job/vision/vit-sweep": func() *unstructured.Unstructured {
				o := job.DeepCopy()
				o.SetUID("other")
				return o
			}()}}},
		{name: "owner unreadable: error, never a denial",
			owners: &fakeOwners{err: errors.New("connection refused")}, wantCode: http.StatusInternalServerError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.Owners = tc.owners
			m := &Mutator{Reviewer: r}
			before := rec.Calls()
			req := admissionRequest(t, admissionv1.Create, sweepPod, "", "system:serviceaccount:kube-system:job-controller")

			resp := m.Handle(context.Background(), req)

			assert.Equal(t, tc.wantDecided, rec.Calls() > before, "decided again")
			if tc.wantCode != 0 {
				require.False(t, resp.Allowed)
				assert.Equal(t, tc.wantCode, resp.Result.Code)
				return
			}
			require.True(t, resp.Allowed, "result: %+v", resp.Result)
			pod := applyPatch(t, req, resp)
			assert.Equal(t, "volcano", nestedString(t, pod, "spec", "schedulerName"))
			assert.Equal(t, d.Queue, pod.GetAnnotations()["scheduling.volcano.sh/queue-name"])
			if !tc.wantDecided {
				assert.Equal(t, scheduler.PodGroupName(jobWorkload), pod.GetAnnotations()["scheduling.k8s.io/group-name"],
					"the pod joins its owner's PodGroup")
			}
		})
	}
}

func TestMutatorInputErrors(t *testing.T) {
	r, rec := reviewtest.Service(t)
	m := &Mutator{Reviewer: r}
	for _, tc := range []struct {
		name        string
		edit        func(*admission.Request)
		wantAllowed bool
		wantCode    int32
		wantMessage string
	}{
		{name: "not JSON", edit: func(r *admission.Request) { r.Object.Raw = []byte("{not json") },
			wantCode: http.StatusBadRequest, wantMessage: "invalid workload"},
		{name: "no object", edit: func(r *admission.Request) { r.Object.Raw = nil },
			wantCode: http.StatusBadRequest, wantMessage: "no object"},
		{name: "kind and object disagree", edit: func(r *admission.Request) { r.Kind.Kind = "Pod"; r.Kind.Group = "" },
			wantCode: http.StatusBadRequest, wantMessage: "request is for a /v1, Kind=Pod"},
		{name: "absurd quantity", edit: func(r *admission.Request) {
			r.Object.Raw = []byte(strings.Replace(string(r.Object.Raw), `"8"`, `"-8"`, 1))
		}, wantCode: http.StatusBadRequest, wantMessage: "cannot read this workload"},
		{name: "not governed", edit: func(r *admission.Request) { r.Kind.Group, r.Kind.Kind = "apps", "DaemonSet" },
			wantAllowed: true, wantMessage: "not governed"},
		{name: "update", edit: func(r *admission.Request) { r.Operation = admissionv1.Update },
			wantAllowed: true, wantMessage: "only creates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := admissionRequest(t, admissionv1.Create, fixtures.PlatformTooBig, "", "alice")
			tc.edit(&req)
			before := rec.Calls()

			resp := m.Handle(context.Background(), req)

			assert.Equal(t, tc.wantAllowed, resp.Allowed)
			require.NotNil(t, resp.Result)
			if !tc.wantAllowed {
				assert.Equal(t, tc.wantCode, resp.Result.Code)
				assert.Equal(t, before, rec.Calls(), "bad input is never decided")
			}
			assert.Contains(t, resp.Result.Message, tc.wantMessage)
		})
	}
}

func TestMutatorExemptNamespace(t *testing.T) {
	r, rec := reviewtest.Service(t)
	m := &Mutator{Reviewer: r, ExemptNamespaces: []string{"platform"}}
	resp := m.Handle(context.Background(), admissionRequest(t, admissionv1.Create, fixtures.PlatformTooBig, "", "alice"))
	assert.True(t, resp.Allowed)
	assert.Zero(t, rec.Calls())
}

// TestValidatorWorkloads: the validating webhook admits without a decision
// only what the mutating webhook sealed for the same request; anything
// else is decided, and directives on it that Mandate would not record for
// it are refused.
func TestValidatorWorkloads(t *testing.T) {
	r, rec := reviewtest.Service(t)
	seal, err := review.NewSeal()
	require.NoError(t, err)
	m := &Mutator{Reviewer: r, Seal: seal}
	v := &Validator{Reviewer: r, Seal: seal}

	// What the mutating webhook stores for VisionSweep, sealed for its request.
	mreq := admissionRequest(t, admissionv1.Create, fixtures.VisionSweep, "", "alice")
	mresp := m.Handle(context.Background(), mreq)
	require.True(t, mresp.Allowed)
	mutated := applyPatch(t, mreq, mresp)
	require.NotEmpty(t, mutated.GetAnnotations()[review.AnnotationDirectivesSeal])
	toYAML := func(obj *unstructured.Unstructured) string {
		out, err := yaml.Marshal(obj.Object)
		require.NoError(t, err)
		return string(out)
	}
	sealed := toYAML(mutated)
	changed := mutated.DeepCopy()
	containers, _, err := unstructured.NestedSlice(changed.Object, "spec", "template", "spec", "containers")
	require.NoError(t, err)
	containers[0].(map[string]any)["resources"] = map[string]any{"limits": map[string]any{"nvidia.com/gpu": "8"}}
	require.NoError(t, unstructured.SetNestedSlice(changed.Object, containers, "spec", "template", "spec", "containers"))
	raised := toYAML(changed)
	forged := mutated.DeepCopy()
	annotations := forged.GetAnnotations()
	annotations[scheduler.AnnotationDirectives] = strings.Replace(annotations[scheduler.AnnotationDirectives], `"preemptible":true`, `"preemptible":false`, 1)
	forged.SetAnnotations(annotations)
	tooBig := reviewtest.Object(t, fixtures.PlatformTooBig)
	tooBig.SetAnnotations(map[string]string{scheduler.AnnotationDirectives: `{"scheduler":"kai"}`})

	for _, tc := range []struct {
		name        string
		obj         string
		wantAllowed bool
		wantDecided bool
		wantMessage string
	}{
		{name: "unmarked and forbidden: decided and denied", obj: fixtures.PlatformTooBig, wantDecided: true, wantMessage: "ceiling"},
		{name: "unmarked and allowed: decided and admitted", obj: fixtures.VisionSweep, wantAllowed: true, wantDecided: true},
		{name: "sealed by the mutating webhook for this request: admitted", obj: sealed, wantAllowed: true},
		{name: "GPUs raised after sealing: decided again, its directives are not the recorded ones: refused", obj: raised, wantDecided: true, wantMessage: "did not record"},
		{name: "directives changed after sealing: decided and refused", obj: toYAML(forged), wantDecided: true, wantMessage: "did not record"},
		{name: "directives written by the submitter: decided and denied", obj: toYAML(tooBig), wantDecided: true, wantMessage: "ceiling"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := rec.Calls()
			req := admissionRequest(t, admissionv1.Create, tc.obj, "", "alice")
			resp := v.Handle(context.Background(), req)
			assert.Equal(t, tc.wantAllowed, resp.Allowed, "result: %+v", resp.Result)
			assert.Equal(t, tc.wantDecided, rec.Calls() > before)
			if !tc.wantAllowed {
				assert.EqualValues(t, http.StatusForbidden, resp.Result.Code)
				assert.Contains(t, resp.Result.Message, tc.wantMessage)
			}
		})
	}
}

func TestValidatorNamespaces(t *testing.T) {
	r, _ := reviewtest.Service(t)
	v := &Validator{Reviewer: r, Tenancy: &Tenancy{}}
	ns := func(labels string) string {
		return "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n  labels: {" + labels + "}\n"
	}
	for _, tc := range []struct {
		name        string
		op          admissionv1.Operation
		obj, old    string
		groups      []string
		wantAllowed bool
		wantMessage string
	}{
		{name: "non-admin sets the tenant on create", op: admissionv1.Create, obj: ns("mandate.dev/tenant: product"),
			groups: []string{"system:authenticated"}, wantMessage: `may not set the mandate.dev/tenant label of namespace "team-a": only members of system:masters or mandate-admins`},
		{name: "non-admin changes the tenant", op: admissionv1.Update, obj: ns("mandate.dev/tenant: product"), old: ns("mandate.dev/tenant: platform"),
			groups: []string{"system:authenticated"}, wantMessage: "may not change"},
		{name: "non-admin removes the tenant", op: admissionv1.Update, obj: ns("team: a"), old: ns("mandate.dev/tenant: platform"),
			groups: []string{"system:authenticated"}, wantMessage: "may not remove"},
		{name: "non-admin edits other labels", op: admissionv1.Update, obj: ns("mandate.dev/tenant: platform, team: b"), old: ns("mandate.dev/tenant: platform"),
			groups: []string{"system:authenticated"}, wantAllowed: true},
		{name: "non-admin creates an untenanted namespace", op: admissionv1.Create, obj: ns("team: a"),
			groups: []string{"system:authenticated"}, wantAllowed: true},
		{name: "mandate admin changes the tenant", op: admissionv1.Update, obj: ns("mandate.dev/tenant: product"), old: ns("mandate.dev/tenant: platform"),
			groups: []string{"system:authenticated", "mandate-admins"}, wantAllowed: true},
		{name: "cluster admin sets the tenant", op: admissionv1.Create, obj: ns("mandate.dev/tenant: product"),
			groups: []string{"system:masters"}, wantAllowed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := v.Handle(context.Background(), admissionRequest(t, tc.op, tc.obj, tc.old, "dave", tc.groups...))
			assert.Equal(t, tc.wantAllowed, resp.Allowed)
			if !tc.wantAllowed {
				assert.EqualValues(t, http.StatusForbidden, resp.Result.Code)
				assert.Contains(t, resp.Result.Message, tc.wantMessage)
			}
		})
	}
}
