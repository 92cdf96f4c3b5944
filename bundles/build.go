package bundles

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/mandate-dev/mandate/modelcheck"
)

// RegoVersion is the rego_version every Mandate bundle declares.
const RegoVersion = 1

// BuildOptions configure Build.
type BuildOptions struct {
	// Revision is the manifest revision. When empty it is the Git commit of
	// the directory, with "-dirty" when the tree has changes under it.
	Revision string
	// Test checks the directory's authority model (package modelcheck) and
	// runs its Rego tests, and refuses to build when either fails: the
	// error wraps modelcheck.ErrInvalidModel, ErrTestsFailed or both.
	Test bool
	// Roots are the manifest roots; [DefaultRoot] when empty.
	Roots []string
	// Metadata is merged into the manifest's metadata beside Mandate's own
	// "mandate" entry. Keep it deterministic: no timestamps unless wanted.
	Metadata map[string]any
}

// Build makes an OPA bundle from a policy directory: its .rego files (less
// *_test.rego suites) and data files (data.json, data.yaml), with a manifest
// carrying the revision, the roots, rego_version 1 and Mandate's metadata.
// The result is serialized and read back with OPA's bundle reader, so it is
// exactly what Load will see, with its roots already validated.
func Build(ctx context.Context, dir string, opts BuildOptions) (*bundle.Bundle, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("unable to build bundle from %q: %w", dir, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("unable to build bundle from %q: not a directory", dir)
	}
	source := "flag"
	if opts.Revision == "" {
		if opts.Revision, err = GitRevision(ctx, dir); err != nil {
			return nil, err
		}
		source = "git"
	}
	if len(opts.Roots) == 0 {
		opts.Roots = []string{DefaultRoot}
	}

	b, err := bundle.NewCustomReader(bundle.NewDirectoryLoader(dir).WithFilter(skipNonBundleFiles)).
		WithRegoVersion(ast.RegoV1).
		WithProcessAnnotations(true).
		WithSkipBundleVerification(true).
		Read()
	if err != nil {
		return nil, fmt.Errorf("unable to build bundle from %q: %w", dir, err)
	}
	if len(b.Modules) == 0 {
		return nil, fmt.Errorf("unable to build bundle from %q: no Rego modules found", dir)
	}
	if opts.Test {
		// Both, so one run reports the model's problems by JSON path and
		// every failing test.
		var errs []error
		if err := modelcheck.Validate(b.Data); err != nil {
			errs = append(errs, fmt.Errorf("unable to build bundle from %q: %w", dir, err))
		}
		if err := RunTests(ctx, dir); err != nil {
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	roots := append([]string(nil), opts.Roots...)
	metadata := map[string]any{}
	for k, v := range opts.Metadata {
		metadata[k] = v
	}
	metadata["mandate"] = map[string]any{"revisionSource": source, "tested": opts.Test}
	regoVersion := RegoVersion
	b.Manifest = bundle.Manifest{
		Revision:    opts.Revision,
		Roots:       &roots,
		RegoVersion: &regoVersion,
		Metadata:    metadata,
	}

	out, err := reread(&b)
	if err != nil {
		return nil, fmt.Errorf("unable to build bundle from %q: %w", dir, err)
	}
	return out, nil
}

// reread serializes b and reads it back with OPA's bundle reader, which
// checks its contents against its manifest's roots.
func reread(b *bundle.Bundle) (*bundle.Bundle, error) {
	var buf bytes.Buffer
	if err := Write(&buf, b); err != nil {
		return nil, err
	}
	out, err := newReader(buf.Bytes()).WithSkipBundleVerification(true).Read()
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// skipNonBundleFiles leaves out test suites and anything an earlier build or
// signing left in the directory: Mandate writes the manifest itself.
func skipNonBundleFiles(_ string, info fs.FileInfo, _ int) bool {
	if info.IsDir() {
		return false
	}
	name := info.Name()
	return strings.HasSuffix(name, "_test.rego") ||
		name == bundle.ManifestExt || name == bundle.ManifestProtoExt || bundle.IsSignaturesFile(name)
}
