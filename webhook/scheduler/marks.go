package scheduler

import (
	"encoding/json"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/evaluator"
)

// WithoutOwnMarks returns the object to decide: obj without the
// preemptibility keys an earlier admission by Mandate wrote onto it (an
// audit of stored objects, or the API server reinvoking /mutate after an
// in-tree plugin changed the object Mandate mutated). The policy reads
// those keys as the tenant claiming an exemption (PREEMPTION_SELF_EXEMPT),
// which is right for a submitted object and wrong for Mandate's own marks:
// a decision that makes the work preemptible would deny every workload it
// admitted as non-preemptible. A key is Mandate's when the object records
// directives (mandate.dev/directives) whose preemptibility the key states;
// any other value is the tenant's and stays. obj itself is not changed. A
// tenant forging the directives annotation gains nothing: Render writes the
// key of the tenant's scheduler from the new decision.
func WithoutOwnMarks(obj *unstructured.Unstructured) *unstructured.Unstructured {
	raw, ok := obj.GetAnnotations()[AnnotationDirectives]
	if !ok {
		return obj
	}
	var d evaluator.Directives
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		return obj
	}
	kai := KAINonPreemptible
	if d.Preemptible {
		kai = KAIPreemptible
	}
	out := obj.DeepCopy()
	if labels := out.GetLabels(); labels[LabelKAIPreemptibility] == kai {
		delete(labels, LabelKAIPreemptibility)
		out.SetLabels(labels)
	}
	if annotations := out.GetAnnotations(); annotations[AnnotationPreemptable] == strconv.FormatBool(d.Preemptible) {
		delete(annotations, AnnotationPreemptable)
		out.SetAnnotations(annotations)
	}
	return out
}
