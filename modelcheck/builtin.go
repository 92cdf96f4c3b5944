package modelcheck

import (
	"fmt"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/types"
)

// ProblemsBuiltin is the Rego name of the checker, for policy tests.
const ProblemsBuiltin = "mandate.model_problems"

var problemsDecl = &ast.Builtin{
	Name:        ProblemsBuiltin,
	Description: "The problems of an authority model (data.mandate.model), each \"<JSON path>: <message>\", sorted; [] for a sound model. The checks of `mandate model check`, JSON Schema included.",
	Decl: types.NewFunction(
		types.Args(types.Named("model", types.A).Description("the authority model, e.g. data.mandate.model")),
		types.Named("problems", types.NewArray(nil, types.S)).Description("the model's problems"),
	),
}

var registerTest sync.Once

// RegisterTestBuiltin makes the checker a builtin of Rego policy tests,
// mandate.model_problems(model), so `mandate opa test` and `bundle build
// --test` fail on a model the checker refuses with the same messages. It
// is for tests only: decisions never call it. Safe to call more than once.
func RegisterTestBuiltin() {
	registerTest.Do(func() {
		ast.RegisterBuiltin(problemsDecl)
		topdown.RegisterBuiltinFunc(ProblemsBuiltin, func(bctx topdown.BuiltinContext, operands []*ast.Term, iter func(*ast.Term) error) error {
			doc, err := ast.JSON(operands[0].Value)
			if err != nil {
				return fmt.Errorf("%s: unable to read the model: %w", ProblemsBuiltin, err)
			}
			problems := Check(doc)
			out := make([]*ast.Term, len(problems))
			for i, p := range problems {
				out[i] = ast.StringTerm(p.String())
			}
			return iter(ast.ArrayTerm(out...))
		})
	})
}
