package review

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/workload"
)

// AnnotationDirectivesSeal, written by the mutating webhook beside
// scheduler.AnnotationDirectives, is a MAC, under a key only this process
// holds, of the object's kind, namespace, name (or the reservation key
// Mandate wrote on an object without a name), its directives and what the
// decision read of it (its normalised workload). The validating webhook admits an object on its
// recorded directives only with a seal it can check: anyone can write
// mandate.dev/directives on an object, and an object the mutating webhook
// never saw (its call failed open, or was skipped) must be decided, not
// trusted. An object whose demand another webhook changed after Mandate is
// decided again too.
const AnnotationDirectivesSeal = "mandate.dev/directives-seal"

// Seal signs recorded directives. The zero Seal (and nil) signs nothing and
// verifies nothing.
type Seal struct{ key []byte }

// NewSeal returns a Seal with a fresh random key. Replicas do not share it:
// a validating call that reaches another replica than its mutating call
// finds no valid seal and decides the object again (the same decision,
// reserved under the same key), so the key never needs distributing.
func NewSeal() (*Seal, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("unable to make the directives seal's key: %w", err)
	}
	return &Seal{key: key}, nil
}

// sign is the seal of obj's recorded directives; false when it has none or
// s has no key.
func (s *Seal) sign(obj *unstructured.Unstructured) (string, bool) {
	if s == nil || len(s.key) == 0 {
		return "", false
	}
	annotations := obj.GetAnnotations()
	marks, ok := annotations[scheduler.AnnotationDirectives]
	if !ok {
		return "", false
	}
	id := obj.GetName()
	if key := annotations[workload.AnnotationReservation]; ledger.IsRequestKey(obj.GetNamespace(), key) {
		id = key
	}
	// What the decision read of the object: its normalised workload (the
	// gang, GPUs, class, topology, scheduler) without its own labels and
	// annotations, which carry the marks. Not the raw spec: the API server
	// changes it after the mutating webhooks (the Priority plugin fills
	// spec.priority), and so may other webhooks, harmlessly.
	w, err := workload.Normalize(obj)
	if err != nil {
		return "", false
	}
	// The name is the id above: an object without one at the mutating
	// webhook has one (from generateName) at the validating one.
	w.Labels, w.Annotations, w.Name, w.GenerateName = nil, nil, "", ""
	demand, err := json.Marshal(w)
	if err != nil {
		return "", false
	}
	mac := hmac.New(sha256.New, s.key)
	for _, part := range []string{obj.GetAPIVersion(), obj.GetKind(), obj.GetNamespace(), id, marks} {
		mac.Write([]byte(part))
		mac.Write([]byte{0})
	}
	mac.Write(demand)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil)), true
}

// Verify says whether obj carries directives this Seal sealed, for this
// object as it is.
func (s *Seal) Verify(obj *unstructured.Unstructured) bool {
	want, ok := s.sign(obj)
	return ok && hmac.Equal([]byte(want), []byte(obj.GetAnnotations()[AnnotationDirectivesSeal]))
}

// patch is the JSON patch operation that seals mutated, the object as the
// earlier operations leave it (its annotations exist); none without a key.
func (s *Seal) patch(mutated *unstructured.Unstructured) []jsonpatch.JsonPatchOperation {
	seal, ok := s.sign(mutated)
	if !ok {
		return nil
	}
	path := "/metadata/annotations/" + strings.ReplaceAll(AnnotationDirectivesSeal, "/", "~1")
	return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", path, seal)}
}
