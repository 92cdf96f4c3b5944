// Package examples reads the example cluster and workloads (examples/) that
// `make demo` and `make bench-webhook` both drive through a real API server:
// the manifests, and the outcome each workload file's name promises.
package examples

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Dimensions of the authority model, in the order the README lists them.
var Dimensions = []string{"tenancy", "priority", "quota", "topology", "preemption"}

// Expectation is what an example's file name promises:
// NN-<what>-<dimension>-denied.yaml is denied by that dimension,
// NN-<what>-denied.yaml by some dimension; any other name is admitted
// (possibly mutated, possibly with a warning).
type Expectation struct {
	Denied    bool
	Dimension string // one of Dimensions, or "" when admitted or unnamed
}

// ExpectationOf reads the expectation from a file's base name.
func ExpectationOf(file string) Expectation {
	parts := strings.Split(strings.TrimSuffix(file, ".yaml"), "-")
	if len(parts) < 2 || parts[len(parts)-1] != "denied" {
		return Expectation{}
	}
	e := Expectation{Denied: true}
	if dim := parts[len(parts)-2]; slices.Contains(Dimensions, dim) {
		e.Dimension = dim
	}
	return e
}

func (e Expectation) String() string {
	if !e.Denied {
		return "admitted"
	}
	if e.Dimension == "" {
		return "denied"
	}
	return "denied by " + e.Dimension
}

// Workload is one object of an example workload file.
type Workload struct {
	File     string // base name
	Object   *unstructured.Unstructured
	Expected Expectation
}

// LoadWorkloads reads dir/*.yaml (examples/workloads) in name order.
func LoadWorkloads(dir string) ([]Workload, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("unable to list %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.yaml in %s", dir)
	}
	sort.Strings(files)
	var out []Workload
	for _, f := range files {
		objs, err := LoadManifests(f)
		if err != nil {
			return nil, err
		}
		base := filepath.Base(f)
		for _, obj := range objs {
			out = append(out, Workload{File: base, Object: obj, Expected: ExpectationOf(base)})
		}
	}
	return out, nil
}

// LoadManifests reads every object of a multi-document YAML or JSON file.
func LoadManifests(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("%s: an object without apiVersion and kind", path)
		}
		objs = append(objs, u)
	}
}
