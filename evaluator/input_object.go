package evaluator

import (
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
)

// readsObject says whether any rule of the parsed (not yet compiled:
// the compiler moves input into local variables) modules may read
// input.object, the raw object: converting it to a Rego value is a third
// of building the input, and the default policies never read it.
// Conservative: input used whole (walk(input), json.marshal(input)) or
// indexed by anything but a constant string counts as reading it, except
// as object.get(input, path, default) with a constant first key.
func readsObject(modules map[string]*ast.Module) bool {
	reads := false
	safe := map[*ast.Term]bool{}
	for _, m := range modules {
		ast.WalkExprs(m, func(e *ast.Expr) bool {
			if terms, ok := e.Terms.([]*ast.Term); ok && e.IsCall() {
				markObjectGet(safe, terms)
			}
			return false
		})
		ast.WalkTerms(m, func(t *ast.Term) bool {
			if call, ok := t.Value.(ast.Call); ok {
				markObjectGet(safe, call)
			}
			return false
		})
	}
	var visit func(t *ast.Term) bool
	visit = func(t *ast.Term) bool {
		if reads {
			return true
		}
		if safe[t] {
			return true
		}
		switch v := t.Value.(type) {
		case ast.Var:
			reads = v.Equal(ast.InputRootDocument.Value)
		case ast.Ref:
			if !v[0].Equal(ast.InputRootDocument) {
				return false // walk on, into the ref's terms
			}
			if len(v) == 1 {
				reads = true
				return true
			}
			key, ok := v[1].Value.(ast.String)
			reads = !ok || key == "object"
			// Not the head (input itself), but what indexes it.
			for _, t := range v[1:] {
				ast.WalkTerms(t, visit)
			}
			return true
		}
		return reads
	}
	for _, m := range modules {
		ast.WalkTerms(m, visit)
	}
	return reads
}

// readsObjectIn is readsObject over the modules and the queries too.
func readsObjectIn(modules map[string]*ast.Module, queries ...string) (bool, error) {
	all := make(map[string]*ast.Module, len(modules)+len(queries))
	for name, m := range modules {
		all[name] = m
	}
	for i, q := range queries {
		body, err := ast.ParseBody(q)
		if err != nil {
			return false, fmt.Errorf("unable to parse the query %q: %w", q, err)
		}
		all[fmt.Sprintf("\x00query%d", i)] = &ast.Module{Package: &ast.Package{Path: ast.Ref{ast.DefaultRootDocument}},
			Rules: []*ast.Rule{{Head: ast.NewHead(ast.Var("q")), Body: body}}}
	}
	return readsObject(all), nil
}

// objectGet is the operator of object.get.
var objectGet = ast.Ref{ast.VarTerm("object"), ast.StringTerm("get")}

// markObjectGet marks, in a call's terms (operator first), the input of
// object.get(input, path, default) whose path starts with a constant key
// other than "object".
func markObjectGet(safe map[*ast.Term]bool, terms []*ast.Term) {
	if len(terms) < 3 || terms[0].Value.Compare(objectGet) != 0 {
		return
	}
	if !terms[1].Equal(ast.InputRootDocument) && !terms[1].Equal(ast.NewTerm(ast.InputRootRef)) {
		return
	}
	first := terms[2]
	if arr, ok := first.Value.(*ast.Array); ok {
		if arr.Len() == 0 {
			return
		}
		first = arr.Elem(0)
	}
	if key, ok := first.Value.(ast.String); ok && key != "object" {
		safe[terms[1]] = true
	}
}
