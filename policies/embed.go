// Package policies holds Mandate's default authority model: the Rego rules
// under mandate/ (one package per authority dimension), the model's data in
// mandate/model/data.json, and their _test.rego suites; and the JSON Schema
// of that data in schema/model.schema.json. The binary embeds both, so
// `mandate eval` and `mandate demo` work with no flags and `mandate model
// check` needs no schema file.
package policies

import "embed"

// FS is the default policy tree, rooted so that mandate/model/data.json is
// data.mandate.model.
//
//go:embed mandate
var FS embed.FS

// ModelSchema is the JSON Schema of the authority model's data
// (mandate/model/data.json): structure, types and the keys there are, for
// editors and the model checker. It lives outside mandate/ so that no OPA
// loader mistakes it for the model's data.
//
//go:embed schema/model.schema.json
var ModelSchema []byte
