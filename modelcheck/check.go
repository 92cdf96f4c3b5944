// Package modelcheck checks an authority model (data.mandate.model, the
// policies' data.json) before it is trusted: its structure against the JSON
// Schema shipped beside the policies (policies/schema/model.schema.json,
// which editors use too), then the checks a schema cannot express — the
// tenant hierarchy (unknown parents, cycles, depth beyond model.MaxDepth),
// quota (guarantee above ceiling, children guaranteeing more than their
// parent), the names the model uses (priority classes, topology levels,
// schedulers, enforcement actions) and the preemption rules. Every problem
// names the JSON path it is about, and every check runs: a model's problems
// are reported together, not the first one alone.
//
// To add a field to the model, add it to the schema and, when it has a rule
// a schema cannot say, one check to checks.
package modelcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/mandate-dev/mandate/model"
)

// ErrInvalidModel is wrapped by the error Validate returns for a model with
// problems.
var ErrInvalidModel = errors.New("invalid authority model")

// Problem is one thing wrong with an authority model.
type Problem struct {
	// Path is the JSON path of what is wrong within the model (data.json),
	// e.g. tenants.research-vision.parent or
	// tenants.platform.quota["nvidia.com/gpu"].guaranteed.
	Path string `json:"path"`
	// Check names the check that found it (schema, hierarchy, quota, …).
	Check string `json:"check"`
	// Message says what is wrong, and what would be right.
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Path == "" {
		return "(model): " + p.Message
	}
	return p.Path + ": " + p.Message
}

// Error is a model with problems; it wraps ErrInvalidModel.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	noun := "problems"
	if len(e.Problems) == 1 {
		noun = "problem"
	}
	return fmt.Sprintf("%s: %d %s:\n  %s", ErrInvalidModel, len(e.Problems), noun, strings.Join(lines, "\n  "))
}

func (e *Error) Unwrap() error { return ErrInvalidModel }

// Check returns every problem of the model document doc (data.mandate.model
// as decoded JSON: maps, slices, strings, bools, and numbers as float64 or
// json.Number), sorted by path; none for a sound model.
func Check(doc any) []Problem {
	m, _ := decode(doc)
	return CheckDecoded(doc, m)
}

// CheckDecoded is Check of a document already decoded into the one typed
// model (model.Decode), as bundle activation decodes it once: the schema
// checks doc, where every problem has its JSON path, and the checks beyond
// it read m; m nil (doc does not decode) leaves the schema's problems.
func CheckDecoded(doc any, m *model.Model) []Problem {
	problems := validateSchema(doc)
	if m != nil {
		var semantic []Problem
		for _, c := range checks {
			r := &reporter{check: c.name}
			c.run(m, r)
			semantic = append(semantic, r.problems...)
		}
		// Where a check explains a value the schema rejects too (an
		// unknown scheduler or enforcement action), its message is the
		// one worth reading.
		explained := map[string]bool{}
		for _, p := range semantic {
			explained[p.Path] = true
		}
		kept := problems[:0]
		for _, p := range problems {
			if !explained[p.Path] {
				kept = append(kept, p)
			}
		}
		problems = append(kept, semantic...)
	}
	sort.SliceStable(problems, func(i, j int) bool {
		if problems[i].Path != problems[j].Path {
			return problems[i].Path < problems[j].Path
		}
		return problems[i].Message < problems[j].Message
	})
	return problems
}

// CheckData checks the authority model of a policy's data (its
// mandate.model); a problem at the root when there is none.
func CheckData(data map[string]any) []Problem {
	doc, ok := model.Document(data)
	if !ok {
		return []Problem{missing}
	}
	return Check(doc)
}

var missing = Problem{Path: "", Check: "schema", Message: "the policy data has no mandate.model: the authority model (mandate/model/data.json) is missing"}

// Validate is CheckData as an error: an *Error listing the problems, nil for
// a sound model.
func Validate(data map[string]any) error {
	_, err := ReadValid(data)
	return err
}

// ReadValid decodes the authority model of a policy's data once and
// checks it: the model, or an *Error listing its problems. It is how a
// policy revision's model is read at activation, and handed on
// (evaluator.Policy.Model) to every Go reader of it.
func ReadValid(data map[string]any) (model.Model, error) {
	doc, ok := model.Document(data)
	if !ok {
		return model.Model{}, asError([]Problem{missing})
	}
	m, decodeErr := model.Decode(doc)
	typed := &m
	if decodeErr != nil {
		typed = nil
	}
	if err := asError(CheckDecoded(doc, typed)); err != nil {
		return model.Model{}, err
	}
	if decodeErr != nil {
		// A type the schema let through: a schema defect, said anyway.
		return model.Model{}, asError([]Problem{{Check: "schema", Message: decodeErr.Error()}})
	}
	return m, nil
}

func asError(problems []Problem) error {
	if len(problems) > 0 {
		return &Error{Problems: problems}
	}
	return nil
}

// decode reads doc into the one typed model the checks read. Not ok when
// a value has the wrong type: the schema reports that, and checks over a
// half-read model would report problems that are not there.
func decode(doc any) (*model.Model, bool) {
	m, err := model.Decode(doc)
	if err != nil {
		return nil, false
	}
	return &m, true
}

// reporter collects one check's problems.
type reporter struct {
	check    string
	problems []Problem
}

func (r *reporter) add(path, format string, args ...any) {
	r.problems = append(r.problems, Problem{Path: path, Check: r.check, Message: fmt.Sprintf(format, args...)})
}

// path renders a JSON path: keys joined with dots, a key that is not a
// plain name (nvidia.com/gpu) in brackets and quotes, indices in brackets.
func path(elems ...any) string {
	var sb strings.Builder
	for _, e := range elems {
		switch e := e.(type) {
		case int:
			fmt.Fprintf(&sb, "[%d]", e)
		case string:
			if plain(e) {
				if sb.Len() > 0 {
					sb.WriteByte('.')
				}
				sb.WriteString(e)
			} else {
				q, _ := json.Marshal(e)
				fmt.Fprintf(&sb, "[%s]", q)
			}
		}
	}
	return sb.String()
}

// plain: a key path can show after a dot.
func plain(key string) bool {
	if key == "" {
		return false
	}
	for _, c := range key {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '$') {
			return false
		}
	}
	return true
}
