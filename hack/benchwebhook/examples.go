package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	examplefiles "github.com/mandate-dev/mandate/hack/internal/examples"
)

// example is one workload of examples/workloads, with the verdict its file
// name promises (…-denied.yaml, …-<dimension>-denied.yaml) and its
// AdmissionReview body.
type example struct {
	file      string
	obj       *unstructured.Unstructured
	denied    bool
	dimension string // tenancy, priority, quota, topology; "" when admitted
	// body is the AdmissionReview with uidPlaceholder where each request's
	// fresh uid goes.
	body []byte
}

// uidPlaceholder has the length and form of the uids that replace it.
const uidPlaceholder = "00000000-0000-0000-0000-000000000000"

// expectedDenied is what a system checking dims (nil: every dimension)
// answers for e.
func (e example) expectedDenied(dims []string) bool {
	if !e.denied {
		return false
	}
	return dims == nil || contains(dims, e.dimension)
}

// loadExamples reads examples/workloads/*.yaml in name order.
func loadExamples(dir string) ([]example, error) {
	ws, err := examplefiles.LoadWorkloads(dir)
	if err != nil {
		return nil, err
	}
	out := make([]example, 0, len(ws))
	for _, w := range ws {
		e := example{file: w.File, obj: w.Object, denied: w.Expected.Denied, dimension: w.Expected.Dimension}
		if e.body, err = admissionReview(w.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", e.file, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// resources maps the examples' kinds to their API resources, as the API
// server names them in an AdmissionRequest.
var resources = map[string]string{
	"Pod": "pods", "Job": "jobs", "PyTorchJob": "pytorchjobs", "Deployment": "deployments",
	"StatefulSet": "statefulsets", "JobSet": "jobsets", "MPIJob": "mpijobs", "RayJob": "rayjobs",
}

// admissionReview is the CREATE request the API server would send for obj.
// The workload keeps its name on every request: its reservation replaces
// its own (the quota transaction releases the key it re-decides), so the
// same example gets the same verdict however often it is sent; only the
// request's uid is fresh each time.
func admissionReview(obj *unstructured.Unstructured) ([]byte, error) {
	gvk := obj.GroupVersionKind()
	res, ok := resources[gvk.Kind]
	if !ok {
		return nil, fmt.Errorf("no API resource known for kind %s", gvk.Kind)
	}
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("unable to encode the object: %w", err)
	}
	opts, err := json.Marshal(metav1.CreateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "CreateOptions"}})
	if err != nil {
		return nil, err
	}
	dryRun := false
	gvr := metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: res}
	kind := metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:         uidPlaceholder,
			Kind:        kind,
			Resource:    gvr,
			RequestKind: &kind, RequestResource: &gvr,
			Name:      obj.GetName(),
			Namespace: obj.GetNamespace(),
			Operation: admissionv1.Create,
			UserInfo: authenticationv1.UserInfo{Username: "bench-user",
				Groups: []string{"system:authenticated"}},
			Object:  runtime.RawExtension{Raw: raw},
			DryRun:  &dryRun,
			Options: runtime.RawExtension{Raw: opts},
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		return nil, fmt.Errorf("unable to encode the AdmissionReview: %w", err)
	}
	if bytes.Count(body, []byte(uidPlaceholder)) != 1 {
		return nil, errors.New("the AdmissionReview does not carry its uid placeholder exactly once")
	}
	return body, nil
}

// withUID is e's body with uid in place of the placeholder.
func (e example) withUID(uid string) []byte {
	return bytes.Replace(e.body, []byte(uidPlaceholder), []byte(uid), 1)
}
