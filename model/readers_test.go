package model_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readers are the packages that read the authority model after
// activation: each imports this package (authoritymetrics reads it through
// clusterreport's report) and decodes the model no other way.
var readers = map[string]bool{"schedsync": true, "modelcheck": true, "clusterreport": true, "explain": true, "authoritymetrics": false}

// modelKeys are JSON keys only the authority model has: a struct tagged
// with one, or a map indexed by one, is a second reading of the model.
// ("tenants" only as an index: a report has tenants of its own.)
var modelKeys = map[string]bool{
	"model": true, "quota": true, "products": true, "priorityClasses": true, "priorities": true,
	"mayPreempt": true, "overGuarantee": true, "deviceClasses": true, "gpuMemoryMiB": true, "classDefaults": true,
}

// TestTheModelIsReadOnce: the readers import the one typed model and
// declare no second model type nor walk the model's JSON by key.
func TestTheModelIsReadOnce(t *testing.T) {
	for pkg, wantImport := range readers {
		dir := filepath.Join("..", pkg)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		imports := false
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			path := filepath.Join(dir, name)
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			require.NoError(t, err)
			for _, imp := range f.Imports {
				if imp.Path.Value == strconv.Quote("github.com/mandate-dev/mandate/model") {
					imports = true
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.StructType:
					for _, field := range n.Fields.List {
						if field.Tag == nil {
							continue
						}
						tag, _ := strconv.Unquote(field.Tag.Value)
						key, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
						assert.False(t, modelKeys[key], "%s: a struct decodes the model's %q: read model.Model instead", path, key)
					}
				case *ast.IndexExpr:
					if lit, ok := n.Index.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						key, _ := strconv.Unquote(lit.Value)
						assert.False(t, modelKeys[key] || key == "tenants", "%s: indexes the model's JSON by %q: read model.Model instead", path, key)
					}
				}
				return true
			})
		}
		if wantImport {
			assert.True(t, imports, "%s reads the one typed model (package model)", pkg)
		}
	}
}
