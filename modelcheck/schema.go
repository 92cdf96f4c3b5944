package modelcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agnivade/levenshtein"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/mandate-dev/mandate/policies"
)

// schemaURL is the $id of policies/schema/model.schema.json.
const schemaURL = "https://mandate.dev/schema/model.schema.json"

// compiled is the model's schema (policies.ModelSchema), compiled once.
var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(policies.ModelSchema))
	if err != nil {
		return nil, fmt.Errorf("unable to read the model's schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("unable to load the model's schema: %w", err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("unable to compile the model's schema: %w", err)
	}
	return s, nil
})

// raw is the schema document itself, to look up the fields an object may
// have.
var raw = sync.OnceValue(func() map[string]any {
	var doc map[string]any
	_ = json.Unmarshal(policies.ModelSchema, &doc) // compiled reports a broken schema
	return doc
})

// printer renders the schema library's messages.
var printer = message.NewPrinter(language.English)

// validateSchema returns the schema's problems with doc: one per failing
// keyword at the deepest place it applies.
func validateSchema(doc any) []Problem {
	s, err := compiled()
	if err != nil {
		return []Problem{{Check: "schema", Message: err.Error()}}
	}
	err = s.Validate(doc)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return []Problem{{Check: "schema", Message: err.Error()}}
	}
	var out []Problem
	collect(doc, verr, &out)
	return out
}

// collect turns the leaves of a validation error into problems, naming the
// key itself for keys that are unknown, missing or badly spelt.
func collect(doc any, e *jsonschema.ValidationError, out *[]Problem) {
	at := e.InstanceLocation
	add := func(loc []string, format string, args ...any) {
		*out = append(*out, Problem{Path: pathOf(doc, loc), Check: "schema", Message: fmt.Sprintf(format, args...)})
	}
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		known := knownFields(e.SchemaURL)
		for _, p := range k.Properties {
			msg := fmt.Sprintf("unknown key %q", p)
			if guess := closest(p, known); guess != "" {
				msg += fmt.Sprintf(": did you mean %q?", guess)
			} else if len(known) > 0 {
				msg += fmt.Sprintf(" (known keys: %s)", strings.Join(known, ", "))
			}
			add(append(slices.Clone(at), p), "%s", msg)
		}
		return
	case *kind.Required:
		for _, p := range k.Missing {
			add(append(slices.Clone(at), p), "required key %q is missing", p)
		}
		return
	case *kind.PropertyNames:
		add(append(propertyNamesLocation(e.SchemaURL, at), k.Property), "key %q is not allowed here: %s", k.Property, leafMessages(e))
		return
	}
	if len(e.Causes) == 0 {
		add(at, "%s", e.ErrorKind.LocalizedString(printer))
		return
	}
	for _, c := range e.Causes {
		collect(doc, c, out)
	}
}

// leafMessages joins the messages of e's deepest causes.
func leafMessages(e *jsonschema.ValidationError) string {
	if len(e.Causes) == 0 {
		return e.ErrorKind.LocalizedString(printer)
	}
	msgs := make([]string, len(e.Causes))
	for i, c := range e.Causes {
		msgs[i] = leafMessages(c)
	}
	return strings.Join(msgs, "; ")
}

// pathOf renders a JSON Pointer's tokens into doc as a JSON path: array
// indices in brackets, keys as path renders them.
func pathOf(doc any, tokens []string) string {
	elems := make([]any, len(tokens))
	node := doc
	for i, t := range tokens {
		elems[i] = t
		switch n := node.(type) {
		case []any:
			if idx, err := strconv.Atoi(t); err == nil && idx >= 0 && idx < len(n) {
				elems[i], node = idx, n[idx]
				continue
			}
			node = nil
		case map[string]any:
			node = n[t]
		default:
			node = nil
		}
	}
	return path(elems...)
}

// propertyNamesLocation is the location of the object whose key a
// propertyNames keyword at url rejects. The library (v6.0.3) gives that
// error a location slice it reuses afterwards, so it is read from the
// schema's path where that is a chain of properties (the schema keeps its
// propertyNames there: tenants, priorities, enforcement); else the
// library's, fallback.
func propertyNamesLocation(url string, fallback []string) []string {
	_, frag, _ := strings.Cut(url, "#")
	toks := strings.Split(strings.TrimPrefix(frag, "/"), "/")
	if len(toks) < 3 || len(toks)%2 == 0 || toks[len(toks)-1] != "propertyNames" {
		return slices.Clone(fallback)
	}
	var loc []string
	for i := 0; i < len(toks)-1; i += 2 {
		if toks[i] != "properties" {
			return slices.Clone(fallback)
		}
		loc = append(loc, strings.NewReplacer("~1", "/", "~0", "~").Replace(toks[i+1]))
	}
	return loc
}

// knownFields are the properties the schema at url (this schema's $id and
// a JSON Pointer fragment) lists, sorted.
func knownFields(url string) []string {
	_, frag, _ := strings.Cut(url, "#")
	var node any = raw()
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[tok]
	}
	m, _ := node.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	return sortedKeys(props)
}

// closest is the known key a misspelt key most likely meant: within two
// edits, or one for short keys; "" for none.
func closest(key string, known []string) string {
	best, bestDist := "", 3
	if len(key) <= 4 {
		bestDist = 2
	}
	for _, k := range known {
		if d := levenshtein.ComputeDistance(strings.ToLower(key), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}
