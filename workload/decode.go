package workload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// MaxDecodeBytes caps the input Decode accepts, all documents together. It
// is well above any real manifest (etcd's default request limit is 1.5 MiB)
// and keeps a hostile input from costing more than a few megabytes to parse.
const MaxDecodeBytes = 8 << 20

// Decode parses YAML or JSON holding one or more Kubernetes objects:
// "---"-separated YAML documents, each an object or a list (JSON input is
// one value per document, as kubectl get -o json prints it). Lists (kind List,
// or a typed list such as PodList with an items array) are expanded into
// their items; items of a typed list without apiVersion or kind inherit the
// list's. Empty documents are skipped. Every error wraps ErrInvalid and names
// the document (0-based, empty documents counted) and, for lists, the item.
func Decode(data []byte) ([]*unstructured.Unstructured, error) {
	if len(data) > MaxDecodeBytes {
		return nil, invalidf("input is %d bytes, more than the %d allowed", len(data), MaxDecodeBytes)
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: unable to read document %d: %v", ErrInvalid, i, err)
		}
		objs, err := decodeDocument(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		out = append(out, objs...)
	}
}

// decodeDocument turns one YAML or JSON document into objects: none for an
// empty document, the items of a list, else the object itself.
func decodeDocument(doc []byte) ([]*unstructured.Unstructured, error) {
	trimmed := bytes.TrimSpace(doc)
	if len(trimmed) == 0 {
		return nil, nil
	}
	var v any
	// JSON parses several times faster directly; YAML flow style that is
	// not JSON ({a: b}) falls through to the YAML parser.
	if trimmed[0] != '{' || utiljson.Unmarshal(trimmed, &v) != nil {
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%w: malformed YAML or JSON: %v", ErrInvalid, err)
		}
		v = nil
		if err := utiljson.Unmarshal(js, &v); err != nil {
			return nil, fmt.Errorf("%w: malformed document: %v", ErrInvalid, err)
		}
	}
	if v == nil {
		return nil, nil // only comments, or an explicit null
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, invalidf("a document must be an object, not %s", jsonType(v))
	}
	apiVersion, kind, err := typeOf(m)
	if err != nil {
		return nil, err
	}
	items, isList := m["items"]
	if !strings.HasSuffix(kind, "List") || !isList {
		return []*unstructured.Unstructured{{Object: m}}, nil
	}
	return expandList(apiVersion, kind, items)
}

// expandList returns the items of a list. Items of a typed list (PodList,
// JobList, …) may leave out apiVersion and kind, as the API server's own
// responses do; items of a generic List may not.
func expandList(apiVersion, kind string, items any) ([]*unstructured.Unstructured, error) {
	if items == nil {
		return nil, nil
	}
	list, ok := items.([]any)
	if !ok {
		return nil, invalidf("%s items must be an array, not %s", kind, jsonType(items))
	}
	itemKind := strings.TrimSuffix(kind, "List")
	out := make([]*unstructured.Unstructured, 0, len(list))
	for j, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, invalidf("item %d: a list item must be an object, not %s", j, jsonType(item))
		}
		if itemKind != "" {
			if _, ok := m["apiVersion"]; !ok {
				m["apiVersion"] = apiVersion
			}
			if _, ok := m["kind"]; !ok {
				m["kind"] = itemKind
			}
		}
		_, k, err := typeOf(m)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", j, err)
		}
		if _, nested := m["items"]; nested && strings.HasSuffix(k, "List") {
			return nil, invalidf("item %d: lists nested in lists are not supported", j)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, nil
}

// typeOf returns the object's apiVersion and kind, which must both be
// non-empty strings.
func typeOf(m map[string]any) (apiVersion, kind string, err error) {
	apiVersion, ok := m["apiVersion"].(string)
	if !ok || apiVersion == "" {
		return "", "", missingField("apiVersion", "every object names its API group and version (e.g. batch/v1)")
	}
	kind, ok = m["kind"].(string)
	if !ok || kind == "" {
		return "", "", missingField("kind", "every object names its kind (e.g. Job)")
	}
	return apiVersion, kind, nil
}

// jsonType names the JSON type of a decoded value, for messages.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}
