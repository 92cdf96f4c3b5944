package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"

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
	// fresh uid goes and namePlaceholder where its fresh object name goes.
	body []byte
}

// uidPlaceholder has the length and form of the uids that replace it.
const uidPlaceholder = "00000000-0000-0000-0000-000000000000"

// namePlaceholder stands for the object's name in an example's body, in
// the request's name and the object's metadata.name; it is never part of
// a workload's own text.
const namePlaceholder = "mandate-bench-name-placeholder"

// requestSeq numbers every request of the run, across systems, so that
// each carries an object name no earlier request carried.
var requestSeq atomic.Uint64

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
		if _, governed := resources[w.Object.GetKind()]; !governed || claimsDevices(w.Object) {
			// What a workload stands on (a DRA ResourceClaimTemplate), and
			// the workloads claiming DRA devices through one: the bench's
			// API server stores no template, so their demand is not the
			// examples' (make demo shows them).
			continue
		}
		e := example{file: w.File, obj: w.Object, denied: w.Expected.Denied, dimension: w.Expected.Dimension}
		if e.body, err = admissionReview(w.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", e.file, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// claimsDevices says whether obj's pods claim DRA devices through a
// ResourceClaimTemplate.
func claimsDevices(obj *unstructured.Unstructured) bool {
	raw, err := json.Marshal(obj.Object)
	return err == nil && strings.Contains(string(raw), `"resourceClaimTemplateName"`)
}

// resources maps the examples' kinds to their API resources, as the API
// server names them in an AdmissionRequest.
var resources = map[string]string{
	"Pod": "pods", "Job": "jobs", "PyTorchJob": "pytorchjobs", "Deployment": "deployments",
	"StatefulSet": "statefulsets", "JobSet": "jobsets", "MPIJob": "mpijobs", "RayJob": "rayjobs",
}

// admissionReview is the CREATE request the API server would send for obj,
// with placeholders for its uid and its object's name: every request gets
// a fresh uid and a name of its own (the example's name and a sequence
// number), the same way for every system, so that nothing a system keeps
// per object (a cache, a quota reservation replaced by its own key)
// answers a repeated request for it. The verdicts do not depend on it: a
// reservation of an admitted example only adds to its tenant's usage,
// which turns a non-preemptible workload preemptible or makes it wait in
// its queue, never denies it; a denied example is denied on its own.
func admissionReview(obj *unstructured.Unstructured) ([]byte, error) {
	gvk := obj.GroupVersionKind()
	res, ok := resources[gvk.Kind]
	if !ok {
		return nil, fmt.Errorf("no API resource known for kind %s", gvk.Kind)
	}
	named := obj.DeepCopy()
	named.SetName(namePlaceholder)
	raw, err := json.Marshal(named.Object)
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
			Name:      namePlaceholder,
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
	if bytes.Count(body, []byte(namePlaceholder)) != 2 {
		return nil, errors.New("the AdmissionReview does not carry its name placeholder exactly twice (request and object)")
	}
	return body, nil
}

// request is e's body for one request: uid in place of the uid
// placeholder and name in place of the name's.
func (e example) request(uid, name string) []byte {
	return bytes.ReplaceAll(bytes.Replace(e.body, []byte(uidPlaceholder), []byte(uid), 1), []byte(namePlaceholder), []byte(name))
}

// next is e's body for the run's next request, with a fresh uid and a
// name no earlier request carried (the example's name and a fixed-width
// sequence number, so every system's names have the same lengths), and
// the uid its answer must echo.
func (e example) next() (body []byte, uid string) {
	uid = string(uuid.NewUUID())
	return e.request(uid, fmt.Sprintf("%s-%010x", e.obj.GetName(), requestSeq.Add(1))), uid
}
