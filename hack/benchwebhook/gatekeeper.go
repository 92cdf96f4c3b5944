package main

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The two ConstraintTemplates the Gatekeeper systems run.
var (
	// gatekeeperTemplate (gatekeeper-light) checks only what needs no
	// cluster state: tenancy and priority.
	//go:embed gatekeeper/template.yaml
	gatekeeperTemplate []byte
	// gatekeeperFullTemplate (gatekeeper) runs the OPA peer's own Rego as
	// libraries, filled in by fullGatekeeperPolicy.
	//go:embed gatekeeper/template-full.yaml
	gatekeeperFullTemplate []byte
)

// gatekeeperPolicy is a ConstraintTemplate and the one constraint of the
// kind it defines.
type gatekeeperPolicy struct {
	template   *unstructured.Unstructured
	kind       string // the constraint's kind, as the template names it
	name       string // the constraint's name
	parameters map[string]any
}

// constraint is the policy's constraint: enforced (deny) on the kinds of
// the examples.
func (p gatekeeperPolicy) constraint() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "constraints.gatekeeper.sh/v1beta1",
		"kind":       p.kind,
		"metadata":   map[string]any{"name": p.name},
		"spec": map[string]any{
			"enforcementAction": "deny",
			"match": map[string]any{"kinds": []any{
				map[string]any{"apiGroups": []any{""}, "kinds": []any{"Pod"}},
				map[string]any{"apiGroups": []any{"batch"}, "kinds": []any{"Job"}},
				map[string]any{"apiGroups": []any{"batch.volcano.sh"}, "kinds": []any{"Job"}},
				map[string]any{"apiGroups": []any{"kubeflow.org"}, "kinds": []any{"PyTorchJob"}},
			}},
			"parameters": p.parameters,
		},
	}}
}

// targetSource is the Rego entry point and libraries of the template's
// single target, whichever of the two places (rego and libs, or
// code[engine=Rego].source) holds them, and the source's Rego version.
func (p gatekeeperPolicy) targetSource() (rego string, libs []string, version string, err error) {
	targets, _, _ := unstructured.NestedSlice(p.template.Object, "spec", "targets")
	if len(targets) != 1 {
		return "", nil, "", fmt.Errorf("template %s: want one target, got %d", p.template.GetName(), len(targets))
	}
	target, _ := targets[0].(map[string]any)
	if r, ok := target["rego"].(string); ok {
		libs, _, _ = unstructured.NestedStringSlice(target, "libs")
		return r, libs, "v0", nil
	}
	code, _ := target["code"].([]any)
	for _, c := range code {
		m, _ := c.(map[string]any)
		if m["engine"] != "Rego" {
			continue
		}
		rego, _, _ = unstructured.NestedString(m, "source", "rego")
		libs, _, _ = unstructured.NestedStringSlice(m, "source", "libs")
		version, _, _ = unstructured.NestedString(m, "source", "version")
		if version == "" {
			version = "v0"
		}
		return rego, libs, version, nil
	}
	return "", nil, "", fmt.Errorf("template %s: no Rego source", p.template.GetName())
}

func readTemplate(raw []byte) (*unstructured.Unstructured, error) {
	t := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &t.Object); err != nil {
		return nil, fmt.Errorf("the ConstraintTemplate: %w", err)
	}
	return t, nil
}

// lightGatekeeperPolicy is gatekeeper/template.yaml with parameters from
// the model: each tenant's priority classes (its own or inherited), the
// class defaults, the GPU resources the tenants have quota for.
func lightGatekeeperPolicy(model map[string]any) (gatekeeperPolicy, error) {
	tmpl, err := readTemplate(gatekeeperTemplate)
	if err != nil {
		return gatekeeperPolicy{}, err
	}
	params, err := gatekeeperParameters(model)
	if err != nil {
		return gatekeeperPolicy{}, err
	}
	return gatekeeperPolicy{template: tmpl, kind: "MandateTenantClass", name: "mandate-tenant-class", parameters: params}, nil
}

// fullGatekeeperPolicy is gatekeeper/template-full.yaml with the OPA
// peer's policy and the reference best fit (the files at policyPath and
// referencePath) as its libraries, and facts, the OPA peer's data, as the
// constraint's parameters.
func fullGatekeeperPolicy(policyPath, referencePath string, facts map[string]any) (gatekeeperPolicy, error) {
	tmpl, err := readTemplate(gatekeeperFullTemplate)
	if err != nil {
		return gatekeeperPolicy{}, err
	}
	var libs []any
	for _, path := range []string{policyPath, referencePath} {
		src, err := os.ReadFile(path)
		if err != nil {
			return gatekeeperPolicy{}, fmt.Errorf("the Gatekeeper template's library: %w", err)
		}
		lib, err := gatekeeperLib(filepath.Base(path), string(src))
		if err != nil {
			return gatekeeperPolicy{}, err
		}
		libs = append(libs, lib)
	}
	targets, _, _ := unstructured.NestedSlice(tmpl.Object, "spec", "targets")
	if len(targets) != 1 {
		return gatekeeperPolicy{}, fmt.Errorf("template-full.yaml: want one target, got %d", len(targets))
	}
	target, _ := targets[0].(map[string]any)
	code, _ := target["code"].([]any)
	if len(code) != 1 {
		return gatekeeperPolicy{}, fmt.Errorf("template-full.yaml: want one code entry, got %d", len(code))
	}
	if err := unstructured.SetNestedSlice(code[0].(map[string]any), libs, "source", "libs"); err != nil {
		return gatekeeperPolicy{}, fmt.Errorf("template-full.yaml: %w", err)
	}
	if err := unstructured.SetNestedSlice(tmpl.Object, targets, "spec", "targets"); err != nil {
		return gatekeeperPolicy{}, fmt.Errorf("template-full.yaml: %w", err)
	}
	// The parameters are the facts as JSON gives them (what the OPA peer
	// loads from its data file), not the Go maps opaData built.
	params, err := deepCopy(facts)
	if err != nil {
		return gatekeeperPolicy{}, fmt.Errorf("the cluster facts: %w", err)
	}
	return gatekeeperPolicy{template: tmpl, kind: "MandateAuthority", name: "mandate-authority", parameters: params}, nil
}

// gatekeeperLibRoot is where the shared Rego goes in the template:
// Gatekeeper accepts library packages strictly below data.lib, and lets a
// template read no other data than data.lib (and data.inventory).
var gatekeeperLibRoot = ast.MustParseRef("data.lib.mandate")

// gatekeeperLib is the Rego v1 module src (named name in errors) as a
// library of the full template: its package and every data reference moved
// below data.lib.mandate (package system → lib.mandate.system, data.bench →
// data.lib.mandate.bench, data.reference → data.lib.mandate.reference).
// Nothing else changes: the module is parsed and printed again, not
// edited as text.
func gatekeeperLib(name, src string) (string, error) {
	m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return "", fmt.Errorf("the Gatekeeper template's library %s: %w", name, err)
	}
	for _, imp := range m.Imports {
		if ref, ok := imp.Path.Value.(ast.Ref); ok && ref.HasPrefix(ast.DefaultRootRef) {
			return "", fmt.Errorf("the Gatekeeper template's library %s imports %s: move the import below %s by hand", name, ref, gatekeeperLibRoot)
		}
	}
	m.Package.Path = underLibRoot(m.Package.Path)
	for _, rule := range m.Rules {
		ast.WalkTerms(rule, func(t *ast.Term) bool {
			if ref, ok := t.Value.(ast.Ref); ok && ref.HasPrefix(ast.DefaultRootRef) && !ref.HasPrefix(gatekeeperLibRoot) {
				t.Value = underLibRoot(ref)
			}
			return false
		})
	}
	out, err := format.AstWithOpts(m, format.Opts{RegoVersion: ast.RegoV1})
	if err != nil {
		return "", fmt.Errorf("the Gatekeeper template's library %s: %w", name, err)
	}
	return string(out), nil
}

// underLibRoot is data.x.y… as data.lib.mandate.x.y….
func underLibRoot(ref ast.Ref) ast.Ref {
	return gatekeeperLibRoot.Concat(ref[1:])
}

// checkGatekeeperRefs fails when a module of the template reads data
// Gatekeeper would refuse: anything but data.lib and data.inventory (its
// regorewriter's rule), or when a library's package is not strictly below
// data.lib.
func checkGatekeeperRefs(modules map[string]*ast.Module, libs []string) error {
	lib, inventory := ast.MustParseRef("data.lib"), ast.MustParseRef("data.inventory")
	var bad []string
	for _, name := range libs {
		path := modules[name].Package.Path
		if !path.HasPrefix(lib) || path.Equal(lib) {
			bad = append(bad, fmt.Sprintf("%s: package %s is not below data.lib", name, path))
		}
	}
	for name, m := range modules {
		for _, rule := range m.Rules {
			ast.WalkRefs(rule, func(ref ast.Ref) bool {
				if ref.HasPrefix(ast.DefaultRootRef) && !ref.HasPrefix(lib) && !ref.HasPrefix(inventory) {
					bad = append(bad, fmt.Sprintf("%s: %s", name, ref))
				}
				return false
			})
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("references Gatekeeper would refuse: %s", strings.Join(bad, "; "))
	}
	return nil
}

// modules parses the template's entry point and libraries as Gatekeeper
// does (the source's Rego version for all of them), checks their data
// references against Gatekeeper's rule, and returns them as Gatekeeper
// compiles them (gatekeeperRewrite): the entry point "template" in package
// template, the libraries "lib_0", "lib_1", … below data.libs.lib.
func (p gatekeeperPolicy) modules() (map[string]*ast.Module, error) {
	rego, libs, version, err := p.targetSource()
	if err != nil {
		return nil, err
	}
	v := ast.RegoV0
	if version == "v1" {
		v = ast.RegoV1
	}
	mods := map[string]*ast.Module{}
	var libNames []string
	srcs := map[string]string{"template": rego}
	for i, l := range libs {
		name := fmt.Sprintf("lib_%d", i)
		srcs[name] = l
		libNames = append(libNames, name)
	}
	for name, src := range srcs {
		m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: v})
		if err != nil {
			return nil, fmt.Errorf("template %s, %s: %w", p.template.GetName(), name, err)
		}
		mods[name] = m
	}
	if err := checkGatekeeperRefs(mods, libNames); err != nil {
		return nil, fmt.Errorf("template %s: %w", p.template.GetName(), err)
	}
	if err := gatekeeperRewrite(mods, "template"); err != nil {
		return nil, fmt.Errorf("template %s: %w", p.template.GetName(), err)
	}
	return mods, nil
}

// gatekeeperRewrite does to mods what Gatekeeper v3.23.1's rewriter
// (frameworks/constraint's regorewriter, used by its Rego driver) does: the
// entry point's package becomes data.template, and each data reference
// other than data.inventory gets the prefix "libs" (data.lib.x →
// data.libs.lib.x), libraries' packages included. Its walk rewrites only
// the terms of an expression, a with or a rule head and stops below each
// of them: a reference nested in a call, a comprehension, a collection or
// `some … in` keeps its data.lib path and so reads nothing at run time.
// Such a reference is an error here, so that a library it would silently
// break fails in the test and at bench start instead of as wrong verdicts.
func gatekeeperRewrite(mods map[string]*ast.Module, entry string) error {
	inventory := ast.MustParseRef("data.inventory")
	prefix := func(ref ast.Ref) ast.Ref {
		if !ref.HasPrefix(ast.DefaultRootRef) || ref.HasPrefix(inventory) {
			return ref
		}
		return append(ast.Ref{ref[0], ast.StringTerm("libs")}, ref[1:]...)
	}
	for name, m := range mods {
		if name == entry {
			m.Package.Path = ast.MustParseRef("data.template")
		} else {
			m.Package.Path = prefix(m.Package.Path)
		}
		for _, rule := range m.Rules {
			ast.WalkTerms(rule, func(t *ast.Term) bool {
				if ref, ok := t.Value.(ast.Ref); ok {
					t.Value = prefix(ref)
				}
				return true // as Gatekeeper's walk does
			})
		}
	}
	lib := ast.MustParseRef("data.lib")
	var missed []string
	for name, m := range mods {
		for _, rule := range m.Rules {
			ast.WalkRefs(rule, func(ref ast.Ref) bool {
				if ref.HasPrefix(lib) {
					missed = append(missed, fmt.Sprintf("%s: %s (line %d)", name, ref, ref[0].Location.Row))
				}
				return false
			})
		}
	}
	if len(missed) > 0 {
		return fmt.Errorf("data references Gatekeeper's rewriter does not reach (nested in a call, comprehension, collection or `some … in`; bind them to a variable or rule of their own): %s", strings.Join(missed, "; "))
	}
	return nil
}
