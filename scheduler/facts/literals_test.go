package facts_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mandate-dev/mandate/scheduler/facts"
)

// elsewhere are the literals equal to a registered one that mean something
// else in the file named: a namespace or a key ID called "default", the pod's (or a PodGroup's) spec.priorityClassName
// field, which KAI's label is named after.
var elsewhere = map[string]map[string]string{
	"default": {
		"bundles/sign.go":            "the default signing key ID",
		"review/review.go":           "the default namespace",
		"cmd/mandate/cli/explain.go": "the default namespace",
		"cmd/mandate/cli/eval.go":    "the default namespace",
	},
	"priorityClassName": {
		"scheduler/podgroup.go":       "a PodGroup's spec field",
		"scheduler/volcano.go":        "a Volcano Job's spec field",
		"scheduler/template.go":       "a pod template's spec field",
		"gang/podgroup.go":            "a PodGroup's spec field",
		"decisionlog/redact.go":       "a pod spec field",
		"workload/sbatch/sbatch.go":   "the pod template's spec field a QOS becomes",
		"simulate/replay/manifest.go": "the pod template's spec field of a simulated job",
	},
}

// TestSchedulerLiteralsAreDefinedOnce: no Go file of the product (tests,
// test/ and hack/ aside) outside the registry spells a registered
// scheduler's name, schedulerName, keys, key prefixes or API groups; they
// look them up in package facts instead. Names and single-word keys must
// not be a whole string literal, no literal may start with a key prefix,
// and keys and groups must not occur in one (import paths aside).
func TestSchedulerLiteralsAreDefinedOnce(t *testing.T) {
	whole, within, prefixes := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, s := range facts.All() {
		whole[s.Name] = true
		if s.SchedulerName != "" {
			whole[s.SchedulerName] = true
		}
		keys := s.Keys()
		for _, r := range s.Requests {
			keys = append(keys, r.Key)
		}
		for _, k := range keys {
			if strings.ContainsAny(k.Name, "./") {
				within[k.Name] = true
			} else {
				whole[k.Name] = true
			}
		}
		for _, p := range s.PodKeyPrefixes {
			prefixes[p] = true
		}
		kinds := append([]facts.Kind(nil), s.GroupKinds...)
		if s.QueueKind != nil {
			kinds = append(kinds, s.QueueKind.Kind)
		}
		if s.TopologyKind != nil {
			kinds = append(kinds, *s.TopologyKind)
		}
		for _, k := range s.SyncKinds {
			kinds = append(kinds, k.Kind)
		}
		for _, k := range kinds {
			within[k.GVK.Group] = true
		}
	}
	root := filepath.Join("..", "..")
	registry, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			abs, _ := filepath.Abs(path)
			if abs == registry || rel == "test" || rel == "hack" || rel == "bin" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		checked++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if _, ok := n.(*ast.ImportSpec); ok {
				return false
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			if whole[v] && elsewhere[v][rel] == "" {
				t.Errorf("%s: the literal %q is a registered scheduler's: look it up in package scheduler/facts", rel, v)
			}
			for w := range within {
				if strings.Contains(v, w) {
					t.Errorf("%s: the literal %q spells %q, a registered scheduler's: look it up in package scheduler/facts", rel, v, w)
				}
			}
			for p := range prefixes {
				if strings.HasPrefix(v, p) {
					t.Errorf("%s: the literal %q starts with %q, a registered scheduler's key prefix: look it up in package scheduler/facts", rel, v, p)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d Go files: the walk missed the product tree", checked)
	}
}
