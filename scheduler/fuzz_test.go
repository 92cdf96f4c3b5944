package scheduler

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/workload"
)

// FuzzApply renders fixed directives onto whatever Decode and Normalize
// accept. The invariant: no panic; Apply either fails with
// ErrInvalidDirectives leaving the object as it was, or succeeds, and a
// second Apply changes nothing.
func FuzzApply(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "objects", "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	directives := []evaluator.Directives{
		{Queue: "q", PriorityClass: "train", Preemptible: true, GangMin: 2, RequiredLevel: "block", RequiredLabel: "block-label",
			RequiredTier: 2, TopologyName: "t", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}},
		{PreferredLevel: "rack", PreferredTier: 1, PreferredLabel: "rack-label"},
		{},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := workload.Decode(data)
		if err != nil {
			return
		}
		for _, obj := range objs {
			w, err := workload.Normalize(obj)
			if err != nil {
				continue
			}
			for _, scheduler := range schedulers {
				a, err := For(scheduler)
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range directives {
					once := obj.DeepCopy()
					if err := a.Apply(once, w, d); err != nil {
						if !errors.Is(err, ErrInvalidDirectives) {
							t.Fatalf("%s: error is not ErrInvalidDirectives: %v", scheduler, err)
						}
						if ops, _ := Patch(obj, once); len(ops) > 0 {
							t.Fatalf("%s: failed Apply changed %v", scheduler, ops)
						}
						continue
					}
					twice := once.DeepCopy()
					if err := a.Apply(twice, w, d); err != nil {
						t.Fatalf("%s: second Apply failed: %v", scheduler, err)
					}
					ops, err := Patch(once, twice)
					if err != nil {
						t.Fatal(err)
					}
					if len(ops) > 0 {
						t.Fatalf("%s: second Apply changed %v", scheduler, ops)
					}
				}
			}
		}
	})
}
