package evaluator

import (
	"fmt"
	"io/fs"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"

	"github.com/mandate-dev/mandate/model"
)

// Policy is a set of Rego modules and the data beside them: the authority
// model as loaded from a directory (or, later, a bundle), before compilation.
type Policy struct {
	// Revision names the policy version that decides (a bundle revision, a
	// Git commit, or "dev" for a working directory).
	Revision string
	Modules  map[string]*ast.Module
	Data     map[string]any
	// Model is Data's authority model (data.mandate.model), when it has
	// been decoded already (bundle activation decodes and checks it once);
	// nil: New decodes it.
	Model *model.Model
}

// LoadPaths reads Rego and data files (JSON, YAML) from the given files or
// directories, leaving out *_test.rego suites.
func LoadPaths(paths []string, revision string) (*Policy, error) {
	return load(loader.NewFileLoader(), paths, revision)
}

// LoadFS reads the whole of fsys as a policy tree (e.g. the embedded default
// policies), leaving out *_test.rego suites.
func LoadFS(fsys fs.FS, revision string) (*Policy, error) {
	return load(loader.NewFileLoader().WithFS(fsys), []string{"."}, revision)
}

func load(fl loader.FileLoader, paths []string, revision string) (*Policy, error) {
	res, err := fl.WithRegoVersion(ast.RegoV1).
		WithProcessAnnotation(true).
		Filtered(paths, skipTests)
	if err != nil {
		return nil, fmt.Errorf("unable to load policies from %s: %w", strings.Join(paths, ", "), err)
	}
	p := &Policy{Revision: revision, Modules: make(map[string]*ast.Module, len(res.Modules)), Data: res.Documents}
	for name, f := range res.Modules {
		p.Modules[name] = f.Parsed
	}
	if len(p.Modules) == 0 {
		return nil, fmt.Errorf("unable to load policies from %s: no Rego modules found", strings.Join(paths, ", "))
	}
	return p, nil
}

func skipTests(_ string, info fs.FileInfo, _ int) bool {
	return !info.IsDir() && strings.HasSuffix(info.Name(), "_test.rego")
}
