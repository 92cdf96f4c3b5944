package workload

import (
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Normalize returns the Workload view of obj. Errors wrap ErrUnsupportedKind
// when no Normaliser is registered for obj's kind, else ErrInvalid.
func Normalize(obj *unstructured.Unstructured) (Workload, error) {
	if obj == nil || obj.Object == nil {
		return Workload{}, invalidf("no object")
	}
	apiVersion, kind, err := typeOf(obj.Object)
	if err != nil {
		return Workload{}, err
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return Workload{}, invalidField("apiVersion", apiVersion, "must be group/version or version")
	}
	gvk := gv.WithKind(kind)
	k, ok := Lookup(gvk)
	if !ok {
		return Workload{}, fmt.Errorf("%w %s: supported kinds are %s", ErrUnsupportedKind, gvkString(gvk), kindList())
	}
	meta, err := objectMeta(obj.Object)
	if err != nil {
		return Workload{}, err
	}
	w, err := k.Normalise(obj)
	if err != nil {
		return Workload{}, fmt.Errorf("%s %s: %w", kind, displayName(meta), err)
	}
	w.APIVersion, w.Kind = apiVersion, kind
	if err := applyMetadata(&w, meta); err != nil {
		return Workload{}, fmt.Errorf("%s %s: %w", kind, displayName(meta), err)
	}
	if err := readSchedulerKeys(&w, meta.Labels, meta.Annotations, templateAnnotations(obj.Object, w.Templates)); err != nil {
		return Workload{}, fmt.Errorf("%s %s: %w", kind, displayName(meta), err)
	}
	if err := checkInvariants(w); err != nil {
		return Workload{}, fmt.Errorf("%s %s: %w", kind, displayName(meta), err)
	}
	return w, nil
}

// objectMeta decodes the object's metadata, rejecting a malformed one.
func objectMeta(obj map[string]any) (metav1.ObjectMeta, error) {
	var meta metav1.ObjectMeta
	raw, ok := obj["metadata"]
	if !ok || raw == nil {
		return meta, missingField("metadata", "every object has metadata with a name")
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return meta, invalidf("metadata is %s: must be an object", jsonType(raw))
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &meta); err != nil {
		return meta, fmt.Errorf("%w: malformed metadata: %v", ErrInvalid, err)
	}
	return meta, nil
}

// applyMetadata fills what every kind reads the same way from metadata.
func applyMetadata(w *Workload, meta metav1.ObjectMeta) error {
	if meta.Name == "" && meta.GenerateName == "" {
		return missingField("metadata.name", "set metadata.name or metadata.generateName")
	}
	w.Name, w.GenerateName, w.Namespace = meta.Name, meta.GenerateName, meta.Namespace
	w.Labels = copyMap(meta.Labels)
	w.Annotations = copyMap(meta.Annotations)
	if w.Roles == nil {
		w.Roles = []Role{}
	}
	if v, ok := meta.Labels[LabelClass]; ok {
		c := Class(v)
		switch c {
		case ClassTraining, ClassInference, ClassInteractive, ClassBatch:
			w.Class = c
		default:
			return invalidField("metadata.labels["+LabelClass+"]", v, "must be one of training, inference, interactive, batch")
		}
	}
	w.RequestedPreemptible, w.RequestedPreemptibleBy = requestedPreemptibility(meta.Labels, meta.Annotations)
	w.Topology.Required = meta.Annotations[AnnotationTopologyRequired]
	w.Topology.Preferred = meta.Annotations[AnnotationTopologyPreferred]
	if v, ok := meta.Annotations[AnnotationMinAvailable]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > w.Pods {
			return invalidField("metadata.annotations["+AnnotationMinAvailable+"]", v,
				fmt.Sprintf("must be a whole number from 1 to the gang size %d", w.Pods))
		}
		w.MinPods = n
	}
	return nil
}

// checkInvariants holds every Normaliser, built in or registered, to the
// Workload contract.
func checkInvariants(w Workload) error {
	switch {
	case w.Pods < 1 || w.Pods > MaxPods:
		return invalidField("pod count", w.Pods, fmt.Sprintf("must be from 1 to %d", MaxPods))
	case w.MinPods < 0 || w.MinPods > w.Pods:
		return invalidField("minimum pod count", w.MinPods, fmt.Sprintf("must be from 0 to the gang size %d", w.Pods))
	case w.GPUsPerPod < 0 || w.GPUsPerPod > MaxGPUsPerPod:
		return invalidField("GPUs per pod", w.GPUsPerPod, fmt.Sprintf("must be from 0 to %d", MaxGPUsPerPod))
	case w.TotalGPUs < 0:
		return invalidField("total GPUs", w.TotalGPUs, "must not be negative")
	}
	return nil
}

// gvkString formats a kind as a manifest names it: "batch/v1 Job", "v1 Pod".
func gvkString(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + " " + gvk.Kind
}

// displayName names an object in messages: namespace/name, or the
// generateName prefix.
func displayName(meta metav1.ObjectMeta) string {
	name := meta.Name
	if name == "" {
		name = meta.GenerateName + "*"
	}
	if meta.Namespace != "" {
		name = meta.Namespace + "/" + name
	}
	return strconv.Quote(name)
}

func copyMap(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// templateAnnotations returns the annotations of the pod templates at ptrs
// ("" is the object itself), skipping any that are not string maps.
func templateAnnotations(obj map[string]any, ptrs []string) []map[string]string {
	var out []map[string]string
	for _, ptr := range ptrs {
		t := obj
		if ptr != "" {
			t = indexedField(obj, ptr)
		}
		ann := mapField(t, "metadata", "annotations")
		m := make(map[string]string, len(ann))
		for k, v := range ann {
			if s, ok := v.(string); ok {
				m[k] = s
			}
		}
		out = append(out, m)
	}
	return out
}

// indexedField follows a JSON pointer whose tokens may index arrays
// ("/spec/tasks/0/template"); nil when it leads nowhere or to a non-object.
func indexedField(obj map[string]any, ptr string) map[string]any {
	var cur any = obj
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		switch node := cur.(type) {
		case map[string]any:
			cur = node[strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(node) {
				return nil
			}
			cur = node[i]
		default:
			return nil
		}
	}
	m, _ := cur.(map[string]any)
	return m
}
