package audit

import (
	"encoding/json"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/webhook/scheduler"
)

// asSubmitted returns the object to decide: obj without the preemptibility
// keys an earlier admission by Mandate wrote onto it. The policy reads
// those keys as the tenant claiming an exemption (PREEMPTION_SELF_EXEMPT),
// which is right for a submitted object and wrong for Mandate's own marks:
// a candidate that makes the work preemptible would deny every workload it
// admitted as non-preemptible. A key is Mandate's when the object records
// directives (mandate.dev/directives) whose preemptibility the key states;
// any other value is the tenant's and stays. obj itself is not changed.
func asSubmitted(obj *unstructured.Unstructured) *unstructured.Unstructured {
	raw, ok := obj.GetAnnotations()[scheduler.AnnotationDirectives]
	if !ok {
		return obj
	}
	var d evaluator.Directives
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		return obj
	}
	kai := scheduler.KAINonPreemptible
	if d.Preemptible {
		kai = scheduler.KAIPreemptible
	}
	out := obj.DeepCopy()
	if labels := out.GetLabels(); labels[scheduler.LabelKAIPreemptibility] == kai {
		delete(labels, scheduler.LabelKAIPreemptibility)
		out.SetLabels(labels)
	}
	if annotations := out.GetAnnotations(); annotations[scheduler.AnnotationPreemptable] == strconv.FormatBool(d.Preemptible) {
		delete(annotations, scheduler.AnnotationPreemptable)
		out.SetAnnotations(annotations)
	}
	return out
}
