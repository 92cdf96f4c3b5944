package bundles

import (
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/mandate-dev/mandate/evaluator"
)

// Load reads the bundle at path into an evaluator.Policy whose Revision is
// the manifest's revision. With verify set, the bundle must be signed and
// verify (ErrUnsigned, ErrVerification); without, any signature is ignored.
// OPA's reader rejects overlapping roots and modules or data outside the
// roots; Load also requires a revision, Rego v1, and the DefaultRoot among
// the roots.
func Load(path string, verify *VerifyOptions) (*evaluator.Policy, error) {
	data, err := readArchive(path)
	if err != nil {
		return nil, err
	}
	var b *bundle.Bundle
	if verify != nil {
		b, err = readVerified(path, data, *verify)
	} else {
		b, err = readUnverified(path, data)
	}
	if err != nil {
		return nil, err
	}
	return policyOf(path, b)
}

// policyOf is the evaluator.Policy of a bundle read from path, whose
// manifest must suit Mandate.
func policyOf(path string, b *bundle.Bundle) (*evaluator.Policy, error) {
	if err := checkManifest(b.Manifest); err != nil {
		return nil, fmt.Errorf("unable to load bundle %q: %w: %w", path, ErrInvalidBundle, err)
	}
	p := &evaluator.Policy{
		Revision: b.Manifest.Revision,
		Modules:  make(map[string]*ast.Module, len(b.Modules)),
		Data:     b.Data,
	}
	for _, m := range b.Modules {
		p.Modules[m.Path] = m.Parsed
	}
	if p.Data == nil {
		p.Data = map[string]any{}
	}
	if len(p.Modules) == 0 {
		return nil, fmt.Errorf("unable to load bundle %q: %w: no Rego modules", path, ErrInvalidBundle)
	}
	return p, nil
}

func checkManifest(m bundle.Manifest) error {
	if m.Revision == "" {
		return fmt.Errorf(".manifest has no revision; build it with `mandate bundle build` or `opa build --revision`")
	}
	if m.RegoVersion != nil && *m.RegoVersion != RegoVersion {
		return fmt.Errorf(".manifest has rego_version %d; Mandate requires Rego v1 (rego_version %d)", *m.RegoVersion, RegoVersion)
	}
	for file, v := range m.FileRegoVersions {
		if v != RegoVersion {
			return fmt.Errorf(".manifest has rego_version %d for %q; Mandate requires Rego v1", v, file)
		}
	}
	if m.Roots == nil || !bundle.RootPathsContain(*m.Roots, DefaultRoot) {
		var roots []string
		if m.Roots != nil {
			roots = *m.Roots
		}
		return fmt.Errorf(".manifest roots %q do not include %q, where the authority model lives", roots, DefaultRoot)
	}
	return nil
}
