package scheduler

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/workload"
)

// podTemplate is one pod template inside an object, addressed by the JSON
// pointers of Workload.Templates. A Pod is its own template (pointer ""):
// a template and a pod both keep their metadata and spec at the top.
type podTemplate struct {
	root map[string]any
}

// templatesOf resolves w.Templates in obj. A pointer that does not lead to
// an object means obj and w disagree, which is the caller's bug.
func templatesOf(obj *unstructured.Unstructured, w workload.Workload) ([]podTemplate, error) {
	out := make([]podTemplate, 0, len(w.Templates))
	for _, ptr := range w.Templates {
		if ptr == workload.NoTemplate {
			continue // the kind's child carries its pods' template
		}
		m, err := resolve(obj.Object, ptr)
		if err != nil {
			return nil, fmt.Errorf("%w: pod template %q: %v", ErrInvalidDirectives, ptr, err)
		}
		out = append(out, podTemplate{root: m})
	}
	return out, nil
}

// resolve follows an RFC 6901 JSON pointer through maps and arrays to an
// object.
func resolve(doc map[string]any, ptr string) (map[string]any, error) {
	if ptr == "" {
		return doc, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, fmt.Errorf("a JSON pointer starts with /")
	}
	var cur any = doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = unescapeToken(tok)
		switch node := cur.(type) {
		case map[string]any:
			next, ok := node[tok]
			if !ok {
				return nil, fmt.Errorf("no field %q", tok)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(node) {
				return nil, fmt.Errorf("no element %q", tok)
			}
			cur = node[i]
		default:
			return nil, fmt.Errorf("%q is inside a scalar", tok)
		}
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not an object")
	}
	return m, nil
}

func (t podTemplate) spec() map[string]any { return ensureMap(t.root, "spec") }

// setSchedulerName sets spec.schedulerName.
func (t podTemplate) setSchedulerName(name string) { t.spec()["schedulerName"] = name }

// setAnnotation sets one annotation on the template's pods.
func (t podTemplate) setAnnotation(key, value string) {
	ensureMap(ensureMap(t.root, "metadata"), "annotations")[key] = value
}

// annotation returns one annotation of the template's pods.
func (t podTemplate) annotation(key string) (string, bool) {
	meta, _ := t.root["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	v, ok := ann[key].(string)
	return v, ok
}

// setPriorityClass sets spec.priorityClassName. When that changes the class,
// it also drops spec.priority and spec.preemptionPolicy: the Priority
// admission plugin derives both from the class and forbids a pod whose
// values disagree with it, so stale ones would make the pod (or every pod a
// controller creates from the template) fail admission.
func (t podTemplate) setPriorityClass(class string) {
	spec := t.spec()
	if spec["priorityClassName"] == class {
		return
	}
	spec["priorityClassName"] = class
	delete(spec, "priority")
	delete(spec, "preemptionPolicy")
}
