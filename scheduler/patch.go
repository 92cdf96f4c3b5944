package scheduler

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/internal/jsonenc"
	"github.com/mandate-dev/mandate/workload"
)

// Patch returns the JSON patch (RFC 6902) that turns original into mutated,
// as an AdmissionResponse carries it; empty when they are equal. mutated is
// Render's (and MarkReservation's) copy of original: the walk compares the
// two decoded documents field by field, never encoding either, and emits
// an operation only where an adapter wrote. The values of the operations
// are mutated's own (shared, not copied).
//
// The order is deterministic: operations under different object fields are
// sorted by field name; inside an array, the edits inside elements come
// first, by index, then the elements added at its end (in order) or
// removed from it (last first).
func Patch(original, mutated *unstructured.Unstructured) ([]jsonpatch.JsonPatchOperation, error) {
	if original == nil || mutated == nil {
		return nil, fmt.Errorf("unable to patch: no object")
	}
	return diff(nil, make([]byte, 0, 128), original.Object, mutated.Object), nil
}

// EncodePatch encodes ops as an AdmissionResponse's patch carries them,
// without reflection: what encoding/json writes of them, values' object
// keys sorted.
func EncodePatch(ops []jsonpatch.JsonPatchOperation) ([]byte, error) {
	b := make([]byte, 0, 96*len(ops)+2)
	b = append(b, '[')
	var err error
	for i, op := range ops {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"op":`...)
		b = jsonenc.AppendString(b, op.Operation)
		b = append(b, `,"path":`...)
		b = jsonenc.AppendString(b, op.Path)
		if op.Operation != "remove" {
			b = append(b, `,"value":`...)
			if b, err = jsonenc.AppendValue(b, op.Value); err != nil {
				return nil, fmt.Errorf("unable to encode the patch of %s: %w", op.Path, err)
			}
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// diff appends to ops the operations that turn a into b, both at the JSON
// pointer path.
func diff(ops []jsonpatch.JsonPatchOperation, path []byte, a, b any) []jsonpatch.JsonPatchOperation {
	switch bv := b.(type) {
	case map[string]any:
		av, ok := a.(map[string]any)
		if !ok {
			break
		}
		return diffObject(ops, path, av, bv)
	case []any:
		av, ok := a.([]any)
		if !ok {
			break
		}
		n := min(len(av), len(bv))
		for i := range n {
			ops = diff(ops, strconv.AppendInt(append(path, '/'), int64(i), 10), av[i], bv[i])
		}
		for i := n; i < len(bv); i++ {
			ops = append(ops, jsonpatch.NewOperation("add", string(strconv.AppendInt(append(path, '/'), int64(i), 10)), bv[i]))
		}
		for i := len(av) - 1; i >= n; i-- {
			ops = append(ops, jsonpatch.NewOperation("remove", string(strconv.AppendInt(append(path, '/'), int64(i), 10)), nil))
		}
		return ops
	default:
		if sameScalar(a, b) {
			return ops
		}
	}
	return append(ops, jsonpatch.NewOperation("replace", string(path), b))
}

// diffObject is diff for two objects: their fields in name order.
func diffObject(ops []jsonpatch.JsonPatchOperation, path []byte, a, b map[string]any) []jsonpatch.JsonPatchOperation {
	keys := make([]string, 0, len(b)+1)
	for k := range b {
		keys = append(keys, k)
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := appendToken(append(path, '/'), k)
		av, inA := a[k]
		bv, inB := b[k]
		switch {
		case !inB:
			ops = append(ops, jsonpatch.NewOperation("remove", string(p), nil))
		case !inA:
			ops = append(ops, jsonpatch.NewOperation("add", string(p), bv))
		default:
			ops = diff(ops, p, av, bv)
		}
	}
	return ops
}

// appendToken appends an object field's name as a JSON pointer token:
// "~" as "~0", "/" as "~1".
func appendToken(dst []byte, tok string) []byte {
	for i := 0; i < len(tok); i++ {
		switch c := tok[i]; c {
		case '~':
			dst = append(dst, '~', '0')
		case '/':
			dst = append(dst, '~', '1')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// sameScalar says whether two decoded JSON values that are not both
// objects nor both arrays encode the same: numbers by value, whatever Go
// type holds them (a decoder's float64 or int64, an adapter's int64).
func sameScalar(a, b any) bool {
	switch av := a.(type) {
	case nil:
		return b == nil
	case string:
		bv, ok := b.(string)
		return ok && av == bv
	case bool:
		bv, ok := b.(bool)
		return ok && av == bv
	case map[string]any, []any:
		return false
	}
	x, okA := number(a)
	y, okB := number(b)
	return okA && okB && x == y
}

// number is a decoded JSON number's value.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float32:
		return float64(n), true
	}
	return 0, false
}

func unescapeToken(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
}

// Render applies directives for their scheduler to a copy of obj and
// returns the copy; obj is left as it was. Both a fresh decision and the
// pods of an admitted gang are rendered this way.
func Render(obj *unstructured.Unstructured, w workload.Workload, d evaluator.Directives) (*unstructured.Unstructured, error) {
	adapter, err := For(d.Scheduler)
	if err != nil {
		return nil, fmt.Errorf("directives name scheduler %q: %w", d.Scheduler, err)
	}
	mutated := obj.DeepCopy()
	if err := adapter.Apply(mutated, w, d); err != nil {
		return nil, fmt.Errorf("unable to apply %s directives: %w", adapter.Name(), err)
	}
	return mutated, nil
}
