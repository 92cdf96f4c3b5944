package modelcheck_test

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"testing"

	"github.com/mandate-dev/mandate/modelcheck"
)

// FuzzCheck: whatever JSON a bundle carries as its model, the checker
// answers without panicking, deterministically, with every problem
// saying which check found what, sorted by path.
func FuzzCheck(f *testing.F) {
	example, err := os.ReadFile(exampleFile)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	f.Add([]byte(`{"tenants": {"a": {"parent": "b"}, "b": {"parent": "a"}}}`))
	f.Add([]byte(`{"tenants": {"": {"quota": {"g": {"guaranteed": 2, "ceiling": 1}}}, "x": {"parent": ""}}}`))
	f.Add([]byte(`{"topology": {"levels": [], "rules": [{"required": "x", "preferred": "x"}, {"maxGPUs": 1}]}}`))
	f.Add([]byte(`{"preemption": {"mayPreempt": {"a": ["a", "b"]}}, "priorities": {"a": {"value": 1, "preemptible": false}}}`))
	f.Add([]byte(`[1, 2]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var doc any
		if dec.Decode(&doc) != nil {
			return
		}
		problems := modelcheck.Check(doc)
		for _, p := range problems {
			if p.Check == "" || p.Message == "" {
				t.Fatalf("problem without a check or message: %#v", p)
			}
		}
		if !sort.SliceIsSorted(problems, func(i, j int) bool { return problems[i].Path < problems[j].Path }) {
			t.Fatalf("problems not sorted by path: %v", problems)
		}
		if again := modelcheck.Check(doc); !reflect.DeepEqual(problems, again) {
			t.Fatalf("not deterministic:\n%v\n%v", problems, again)
		}
	})
}
