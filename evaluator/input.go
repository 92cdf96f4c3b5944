package evaluator

import (
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// Input is what one decision is made on: input in Rego.
type Input struct {
	Request   Request            `json:"request"`
	Namespace workload.Namespace `json:"namespace"`
	Workload  workload.Workload  `json:"workload"`
	// Usage holds GPU usage per tenant (the requesting tenant and its
	// ancestors, each rolled up over its subtree) per GPU resource.
	Usage map[string]map[string]ledger.Usage `json:"usage"`
	// Object is the raw object, for custom rules.
	Object map[string]any `json:"object"`
	// Cluster is the topology snapshot the placement builtin reads; nil
	// leaves topology unchecked.
	Cluster *topology.Snapshot `json:"-"`
	// Explain asks for the per-dimension explanations too; they cost a
	// third of an evaluation, so admissions ask only when a person will read
	// them.
	Explain bool `json:"-"`
}

// Request carries the AdmissionRequest essentials.
type Request struct {
	Operation string   `json:"operation"`
	User      string   `json:"user"`
	Groups    []string `json:"groups"`
	DryRun    bool     `json:"dryRun"`
	// UID is the AdmissionRequest's uid: it keys the reservation of an
	// object that has no name yet (generateName). Not part of the policy's
	// input: the same workload is decided the same whoever's request.
	UID string `json:"-"`
}

// value converts the input to a Rego value, term by term (input_value.go).
func (in *Input) value() (ast.Value, error) {
	obj := ast.NewObject(
		ast.Item(str("request"), requestTerm(in.Request)),
		ast.Item(str("namespace"), namespaceTerm(in.Namespace)),
		ast.Item(str("workload"), workloadTerm(&in.Workload)),
		ast.Item(str("usage"), usageTerm(in.Usage)),
	)
	if in.Object != nil {
		raw, err := ast.InterfaceToValue(in.Object)
		if err != nil {
			return nil, fmt.Errorf("unable to convert the raw object: %w", err)
		}
		obj.Insert(str("object"), ast.NewTerm(raw))
	}
	return obj, nil
}
