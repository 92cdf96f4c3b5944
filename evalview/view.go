// Package evalview renders decisions for people and for machines: the table
// `mandate eval` and `mandate demo` print (what was admitted, mutated or
// denied, by which dimension and why), and the JSON/YAML view whose top level
// carries allowed, violations (with the warned and dryrun ones of staged
// rules), warnings and directives.
package evalview

import (
	"encoding/json"
	"fmt"
	"io"

	"gomodules.xyz/jsonpatch/v2"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/review"
)

// Item is one decided object and where it came from.
type Item struct {
	Source string
	Review review.Result
}

// View is the machine-readable form of one Item.
type View struct {
	Source       string                         `json:"source"`
	Workload     WorkloadRef                    `json:"workload"`
	Allowed      bool                           `json:"allowed"`
	Violations   []evaluator.Violation          `json:"violations"`
	Warned       []evaluator.Violation          `json:"warned,omitempty"`
	DryRun       []evaluator.Violation          `json:"dryrun,omitempty"`
	Warnings     []string                       `json:"warnings"`
	Reasons      []evaluator.Violation          `json:"reasons,omitempty"`
	Directives   evaluator.Directives           `json:"directives"`
	Explanations []evaluator.Explanation        `json:"explanations"`
	Patch        []jsonpatch.JsonPatchOperation `json:"patch"`
	DecisionID   string                         `json:"decisionId"`
	Revision     string                         `json:"revision"`
}

// WorkloadRef names a workload.
type WorkloadRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Tenant    string `json:"tenant"`
}

// ViewOf builds the machine-readable form, with empty lists rather than null.
func ViewOf(it Item) View {
	r := it.Review
	d := r.Decision
	v := View{
		Source:       it.Source,
		Workload:     WorkloadRef{Kind: r.Workload.Kind, Namespace: r.Workload.Namespace, Name: r.Workload.Name, Tenant: r.Workload.Tenant},
		Allowed:      d.Allowed,
		Violations:   d.Violations,
		Warned:       d.Warned,
		DryRun:       d.DryRun,
		Warnings:     d.Warnings,
		Reasons:      d.Reasons,
		Directives:   d.Directives,
		Explanations: d.Explanations,
		Patch:        r.Patch,
		DecisionID:   d.ID,
		Revision:     d.Revision,
	}
	if v.Violations == nil {
		v.Violations = []evaluator.Violation{}
	}
	if v.Warnings == nil {
		v.Warnings = []string{}
	}
	if v.Patch == nil {
		v.Patch = []jsonpatch.JsonPatchOperation{}
	}
	return v
}

// WriteJSON writes one item as an object, several as an array.
func WriteJSON(w io.Writer, items []Item) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(views(items))
}

// WriteYAML writes one item as a document, several as a list.
func WriteYAML(w io.Writer, items []Item) error {
	b, err := yaml.Marshal(views(items))
	if err != nil {
		return fmt.Errorf("unable to render YAML: %w", err)
	}
	_, err = w.Write(b)
	return err
}

func views(items []Item) any {
	if len(items) == 1 {
		return ViewOf(items[0])
	}
	out := make([]View, len(items))
	for i, it := range items {
		out[i] = ViewOf(it)
	}
	return out
}
