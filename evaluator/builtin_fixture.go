package evaluator

import (
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// RegisterTestBuiltins makes mandate.placement also read a fixture cluster
// given in its request (request.cluster, which the default policies fill
// from data.mandate.cluster), so Rego tests place gangs on clusters of
// their own. It replaces only the implementation: the declaration, and so
// type checking, stay the production ones. Only the test runners call it
// (`mandate opa …` and `mandate bundle build --test`); `mandate serve`
// never does, so a bundle's data cannot feed a decision a fake cluster.
func RegisterTestBuiltins() { topdown.RegisterBuiltinFunc(PlacementBuiltin, placementFunc(true)) }

// placementFunc is mandate.placement as a topdown builtin, reporting an
// error as rego.RegisterBuiltin1 does.
func placementFunc(fixtures bool) topdown.BuiltinFunc {
	return func(bctx topdown.BuiltinContext, operands []*ast.Term, iter func(*ast.Term) error) error {
		out, err := placement(bctx, operands[0], fixtures)
		if err != nil {
			return (&topdown.Error{Code: topdown.BuiltinErr, Message: PlacementBuiltin + ": " + err.Error(), Location: bctx.Location}).Wrap(err)
		}
		if out == nil {
			return nil
		}
		return iter(out)
	}
}
