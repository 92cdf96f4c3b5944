// Package bundles owns Mandate's distribution format for the authority model:
// OPA bundles (tar.gz with a .manifest carrying revision, roots, rego_version
// and metadata, and OPA's .signatures.json), built from a policy directory
// and its Git revision, optionally gated on the directory's Rego tests,
// signed and verified with OPA's own bundle signing, inspected, and loaded
// into an evaluator.Policy. It never defines a format of its own: every
// archive it writes is one `opa run`, `opa inspect` and `opa build
// --verification-key` read as well.
package bundles
