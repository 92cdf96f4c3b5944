package evaluator

import "github.com/open-policy-agent/opa/v1/topdown"

// UseProductionBuiltins undoes RegisterTestBuiltins in tests.
func UseProductionBuiltins() { topdown.RegisterBuiltinFunc(PlacementBuiltin, placementFunc(false)) }
