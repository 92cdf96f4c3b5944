package scheduler

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/workload"
)

// MarkReservation writes key as workload.AnnotationReservation on obj and
// on each of its pod templates, so the pods that are stored confirm the
// reservation of a workload admitted before it had a name; key "" removes
// the annotation everywhere instead (a named workload's pods confirm its
// reservation by name, and a value the submitter wrote is never Mandate's).
func MarkReservation(obj *unstructured.Unstructured, w workload.Workload, key string) error {
	templates, err := templatesOf(obj, w)
	if err != nil {
		return err
	}
	roots := []map[string]any{obj.Object}
	for _, t := range templates {
		roots = append(roots, t.root)
	}
	for _, root := range roots {
		if key != "" {
			ensureMap(ensureMap(root, "metadata"), "annotations")[workload.AnnotationReservation] = key
			continue
		}
		meta, _ := root["metadata"].(map[string]any)
		annotations, _ := meta["annotations"].(map[string]any)
		if _, ok := annotations[workload.AnnotationReservation]; ok {
			delete(annotations, workload.AnnotationReservation)
			if len(annotations) == 0 {
				delete(meta, "annotations")
			}
		}
	}
	return nil
}
