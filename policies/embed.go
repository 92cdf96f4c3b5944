// Package policies holds Mandate's default authority model: the Rego rules
// under mandate/ (one package per authority dimension), the model's data in
// mandate/model/data.json, and their _test.rego suites. The binary embeds it
// so `mandate eval` and `mandate demo` work with no flags.
package policies

import "embed"

// FS is the default policy tree, rooted so that mandate/model/data.json is
// data.mandate.model.
//
//go:embed mandate
var FS embed.FS
