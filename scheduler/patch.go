package scheduler

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/workload"
)

// Patch returns the JSON patch (RFC 6902) that turns original into mutated,
// as an AdmissionResponse carries it; empty when they are equal.
//
// The order is deterministic (the diff library walks Go maps, whose order is
// random): operations under different object fields commute and are sorted
// by field name; inside an array, the operations that add or remove
// elements keep the order their indexes need and come first, then those
// inside elements, by index.
func Patch(original, mutated *unstructured.Unstructured) ([]jsonpatch.JsonPatchOperation, error) {
	a, err := json.Marshal(original.Object)
	if err != nil {
		return nil, fmt.Errorf("unable to encode the original object: %w", err)
	}
	b, err := json.Marshal(mutated.Object)
	if err != nil {
		return nil, fmt.Errorf("unable to encode the mutated object: %w", err)
	}
	ops, err := jsonpatch.CreatePatch(a, b)
	if err != nil {
		return nil, fmt.Errorf("unable to diff the objects: %w", err)
	}
	type entry struct {
		op     jsonpatch.JsonPatchOperation
		tokens []string
		pos    int
	}
	entries := make([]entry, len(ops))
	for i, op := range ops {
		entries[i] = entry{op: op, tokens: strings.Split(strings.TrimPrefix(op.Path, "/"), "/"), pos: i}
	}
	sort.Slice(entries, func(i, j int) bool {
		return opLess(original.Object, entries[i].tokens, entries[j].tokens, entries[i].pos < entries[j].pos)
	})
	out := make([]jsonpatch.JsonPatchOperation, len(entries))
	for i, e := range entries {
		out[i] = e.op
	}
	return out, nil
}

// opLess orders two operations by their path tokens, walking doc (the
// original) to know whether each token is an object field or an array
// index; before says which came first from the diff, the tie-breaker where
// order matters.
func opLess(doc any, a, b []string, before bool) bool {
	cur := doc
	for i := 0; i < len(a) && i < len(b); i++ {
		switch node := cur.(type) {
		case map[string]any:
			if a[i] != b[i] {
				return a[i] < b[i]
			}
			cur = node[unescapeToken(a[i])]
		case []any:
			aLeaf, bLeaf := i == len(a)-1, i == len(b)-1
			if aLeaf || bLeaf {
				if aLeaf && bLeaf {
					return before // adds and removes: the diff's order
				}
				return aLeaf // element count changes before edits inside elements
			}
			na, errA := strconv.Atoi(a[i])
			nb, errB := strconv.Atoi(b[i])
			if errA != nil || errB != nil || na < 0 || na >= len(node) {
				return before
			}
			if na != nb {
				return na < nb
			}
			cur = node[na]
		default:
			return before
		}
	}
	return before
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
