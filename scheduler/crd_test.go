package scheduler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
	"sigs.k8s.io/yaml"
)

// The upstream CRDs in testdata/crds are copies of
// Volcano v1.15.1's own CRDs (the version whose keys docs/architecture.md
// lists under "Scheduler contracts").

// crdSchema returns the openAPIV3Schema of one version of a CRD file.
func crdSchema(t *testing.T, file, version string) *spec.Schema {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "crds", file))
	require.NoError(t, err)
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema json.RawMessage `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(data, &crd))
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			var s spec.Schema
			require.NoError(t, json.Unmarshal(v.Schema.OpenAPIV3Schema, &s))
			return &s
		}
	}
	t.Fatalf("%s has no version %s", file, version)
	return nil
}

// crdProblems validates obj against a CRD schema offline, as the API server
// would: schema violations, plus fields the server would silently prune
// because the schema does not know them.
func crdProblems(schema *spec.Schema, obj map[string]any) []string {
	var out []string
	for _, err := range validate.NewSchemaValidator(schema, nil, "", strfmt.Default).Validate(obj).Errors {
		out = append(out, err.Error())
	}
	out = append(out, unknownFields(schema, obj, "")...)
	sort.Strings(out)
	return out
}

// unknownFields lists the paths in v that schema does not declare.
func unknownFields(schema *spec.Schema, v any, path string) []string {
	if schema == nil || len(schema.AnyOf) > 0 {
		return nil
	}
	if preserve, _ := schema.Extensions["x-kubernetes-preserve-unknown-fields"].(bool); preserve {
		return nil
	}
	var out []string
	switch x := v.(type) {
	case map[string]any:
		if path == ".metadata" {
			return nil // ObjectMeta is validated by the API server itself
		}
		for k, child := range x {
			if prop, ok := schema.Properties[k]; ok {
				out = append(out, unknownFields(&prop, child, path+"."+k)...)
			} else if schema.AdditionalProperties != nil && schema.AdditionalProperties.Schema != nil {
				out = append(out, unknownFields(schema.AdditionalProperties.Schema, child, path+"."+k)...)
			} else {
				out = append(out, fmt.Sprintf("%s.%s: unknown field, the API server would prune it", path, k))
			}
		}
	case []any:
		if schema.Items != nil && schema.Items.Schema != nil {
			for i, child := range x {
				out = append(out, unknownFields(schema.Items.Schema, child, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	}
	return out
}

// decodeStrict decodes obj into a typed API object, failing on any field
// the type does not have.
func decodeStrict(t *testing.T, obj map[string]any, into any) {
	t.Helper()
	raw, err := json.Marshal(obj)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(into))
}
