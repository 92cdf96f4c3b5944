package webhook

import (
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"
)

// admissionRequest builds a request for a YAML object.
func admissionRequest(t testing.TB, op admissionv1.Operation, objYAML, oldYAML string, user string, groups ...string) admission.Request {
	t.Helper()
	raw := func(y string) []byte {
		if y == "" {
			return nil
		}
		b, err := yaml.YAMLToJSON([]byte(y))
		if err != nil {
			t.Fatalf("fixture: %v", err)
		}
		return b
	}
	obj := raw(objYAML)
	if obj == nil {
		obj = raw(oldYAML)
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(obj, &meta); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	gv, err := runtimeGroupVersion(meta.APIVersion)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "0b1c2d3e-0000-4000-8000-000000000001",
		Kind:      metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: meta.Kind},
		Resource:  metav1.GroupVersionResource{Group: gv.Group, Version: gv.Version},
		Name:      meta.Metadata.Name,
		Namespace: meta.Metadata.Namespace,
		Operation: op,
		UserInfo:  authenticationv1.UserInfo{Username: user, Groups: groups},
		Object:    runtime.RawExtension{Raw: raw(objYAML)},
		OldObject: runtime.RawExtension{Raw: raw(oldYAML)},
		DryRun:    ptr.To(false),
	}}
}

func runtimeGroupVersion(apiVersion string) (metav1.GroupVersion, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return metav1.GroupVersion{Group: gv.Group, Version: gv.Version}, err
}
