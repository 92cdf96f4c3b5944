package schedsync

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// volatile are the fields that change on every write and say nothing about
// what the object configures.
var volatile = [][]string{
	{"metadata", "managedFields"},
	{"metadata", "resourceVersion"},
	{"metadata", "generation"},
	{"metadata", "creationTimestamp"},
	{"metadata", "uid"},
	{"status"},
}

// diffObjects lists, as "path: before -> after", every field that differs
// between live and after (the dry-run result of applying the model's
// object), leaving out the volatile fields.
func diffObjects(live, after *unstructured.Unstructured) []string {
	a, b := live.DeepCopy().Object, after.DeepCopy().Object
	for _, f := range volatile {
		unstructured.RemoveNestedField(a, f...)
		unstructured.RemoveNestedField(b, f...)
	}
	var out []string
	diffValues("", a, b, &out)
	sort.Strings(out)
	return out
}

func diffValues(path string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			diffValues(p, am[k], bm[k], out)
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			diffValues(fmt.Sprintf("%s[%d]", path, i), al[i], bl[i], out)
		}
		return
	}
	if reflect.DeepEqual(normal(a), normal(b)) {
		return
	}
	*out = append(*out, fmt.Sprintf("%s: %s -> %s", path, display(a), display(b)))
}

// normal makes numbers comparable whatever type the decoder chose.
func normal(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

func display(v any) string {
	if v == nil {
		return "<none>"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(string(b))
}
