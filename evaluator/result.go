package evaluator

import (
	"encoding/json"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/mandate-dev/mandate/ledger"
)

// The decision is read from OPA's own values, not from their conversion to
// Go maps and slices (rego's default result, which costs an allocation per
// value and a map per object on every admission): asValue hands the values
// over as they are, and the reader below looks up the keys it knows, which
// are interned once here.
func init() {
	ast.InternStringTerm(
		"allowed", "violations", "warned", "dryrun", "reasons", "warnings", "directives", "relied",
		"code", "dimension", "message", "enforcement", "placement",
		"scheduler", "queue", "priorityClass", "preemptible", "gangMin", "requiredLevel", "requiredLabel",
		"requiredTier", "preferredLevel", "preferredLabel", "preferredTier", "topologyName", "labels", "annotations",
		"tenant", "usage", "ceiling", "guaranteed", "demand", "seen", "total", "nonPreemptible", "busy", "overGuarantee",
		"verdict", "limit", "current",
	)
}

// asValue is the rego result conversion that keeps OPA's value.
func asValue(t *ast.Term, _ *rego.EvalContext) (any, error) { return t.Value, nil }

// decodeDecision reads the values of the decision (and, when asked for, the
// explanations) field by field, so that a policy returning the wrong shape
// gets an error naming the field. No JSON round trip: this runs on every
// admission. Type names in errors are those of the values' JSON form
// (typeName).
func decodeDecision(v, explanations ast.Value) (Decision, error) {
	var d Decision
	obj, ok := v.(ast.Object)
	if !ok {
		return d, fmt.Errorf("decision is %s, want an object", typeName(v))
	}
	r := reader{}
	d.Allowed = r.boolean(obj, "decision", "allowed", true)
	d.Violations = r.violations(obj, "violations")
	d.Warned = r.violations(obj, "warned")
	d.DryRun = r.violations(obj, "dryrun")
	d.Reasons = r.violations(obj, "reasons")
	for i, item := range r.list(obj, "warnings") {
		s, ok := item.Value.(ast.String)
		if !ok {
			r.fail("decision.warnings[%d] is %s, want a string", i, typeName(item.Value))
		}
		d.Warnings = append(d.Warnings, string(s))
	}
	if raw := get(obj, "directives"); raw != nil {
		d.Directives = r.directives(r.object(raw, "decision.directives"))
	}
	if get(obj, "relied") != nil {
		d.ReliedKnown = true
		d.Relied = r.relied(obj)
	}
	if !isNull(explanations) {
		list, ok := elems(explanations)
		if !ok {
			r.fail("explanations is %s, want an array", typeName(explanations))
		}
		for i, item := range list {
			m := r.object(item.Value, fmt.Sprintf("explanations[%d]", i))
			d.Explanations = append(d.Explanations, Explanation{
				Dimension: Dimension(r.str(m, "dimension")),
				Verdict:   r.str(m, "verdict"),
				Limit:     r.str(m, "limit"),
				Current:   r.str(m, "current"),
			})
		}
	}
	if r.err != nil {
		return Decision{}, r.err
	}
	if !d.Allowed && len(d.Violations) == 0 {
		return d, fmt.Errorf("decision denies without a violation: a person could not tell why")
	}
	return d, nil
}

// get is obj[key], nil when obj is nil or has no key.
func get(obj ast.Object, key string) ast.Value {
	if obj == nil {
		return nil
	}
	t := obj.Get(ast.InternedTerm(key))
	if t == nil {
		return nil
	}
	return t.Value
}

// isNull: v is missing (nil) or null.
func isNull(v ast.Value) bool {
	if v == nil {
		return true
	}
	_, null := v.(ast.Null)
	return null
}

// elems are the elements of an array, or of a set in the order its JSON
// form lists them; ok is false for any other value.
func elems(v ast.Value) ([]*ast.Term, bool) {
	switch x := v.(type) {
	case *ast.Array:
		out := make([]*ast.Term, x.Len())
		for i := range out {
			out[i] = x.Elem(i)
		}
		return out, true
	case ast.Set:
		return x.Slice(), true
	}
	return nil, false
}

// typeName is the Go type of v's JSON form (ast.JSON), which error
// messages have always named.
func typeName(v ast.Value) string {
	switch v.(type) {
	case nil, ast.Null:
		return "<nil>"
	case ast.Boolean:
		return "bool"
	case ast.Number:
		return "json.Number"
	case ast.String:
		return "string"
	case *ast.Array, ast.Set:
		return "[]interface {}"
	case ast.Object:
		return "map[string]interface {}"
	}
	return fmt.Sprintf("%T", v)
}

// violations reads the list of violations at obj[key]; each one's
// enforcement, when set, must be an action.
func (r *reader) violations(obj ast.Object, key string) []Violation {
	list := r.list(obj, key)
	if len(list) == 0 {
		return nil
	}
	out := make([]Violation, 0, len(list))
	for i, item := range list {
		m, ok := item.Value.(ast.Object)
		if !ok {
			r.fail("decision.%s[%d] is %s, want an object", key, i, typeName(item.Value))
			continue
		}
		v := Violation{
			Code:        r.str(m, "code"),
			Dimension:   Dimension(r.str(m, "dimension")),
			Message:     r.str(m, "message"),
			Enforcement: r.str(m, "enforcement"),
		}
		switch v.Enforcement {
		case "", EnforceDeny, EnforceWarn, EnforceDryRun:
		default:
			r.fail("decision.%s[%d].enforcement is %q, want %s, %s or %s", key, i, v.Enforcement, EnforceDeny, EnforceWarn, EnforceDryRun)
		}
		r.facts(m, key, i, &v)
		out = append(out, v)
	}
	return out
}

// facts reads the facts and the warning text of violation m (the i-th of
// the decision's list key, as messages name it); keys it does not know
// are left alone (a custom rule's own). One pass over the keys the
// violation has, not a lookup per fact.
func (r *reader) facts(m ast.Object, key string, i int, v *Violation) {
	field := func() string { return fmt.Sprintf("decision.%s[%d]", key, i) }
	m.Foreach(func(kt, vt *ast.Term) {
		k, ok := kt.Value.(ast.String)
		if !ok {
			return
		}
		raw := vt.Value
		var s *string
		var n *int
		switch k {
		case "tenant":
			s = &v.Tenant
		case "namespace":
			s = &v.Namespace
		case "resource":
			s = &v.Resource
		case "product":
			s = &v.Product
		case "level":
			s = &v.Level
		case "domain":
			s = &v.Domain
		case "pool":
			s = &v.Pool
		case "class":
			s = &v.Class
		case "key":
			s = &v.Key
		case "asked":
			s = &v.Asked
		case "queue":
			s = &v.Queue
		case "warning":
			s = &v.Warning
		case "limit":
			n = &v.Limit
		case "current":
			n = &v.Current
		case "needs":
			n = &v.Needs
		case "classes":
			list, ok := elems(raw)
			if !ok {
				r.fail("%s.classes is %s, want an array", field(), typeName(raw))
				return
			}
			v.Classes = make([]string, len(list))
			for j, c := range list {
				str, ok := c.Value.(ast.String)
				if !ok {
					r.fail("%s.classes[%d] is %s, want a string", field(), j, typeName(c.Value))
				}
				v.Classes[j] = string(str)
			}
			return
		default:
			return
		}
		if s != nil {
			str, ok := raw.(ast.String)
			if !ok {
				r.fail("%s.%s is %s, want a string", field(), k, typeName(raw))
			}
			*s = string(str)
			return
		}
		*n = r.number(raw, field, string(k))
	})
}

// reader keeps the first shape error it meets; later reads return zero values.
type reader struct{ err error }

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *reader) object(v ast.Value, field string) ast.Object {
	m, ok := v.(ast.Object)
	if !ok {
		r.fail("%s is %s, want an object", field, typeName(v))
	}
	return m
}

func (r *reader) list(obj ast.Object, key string) []*ast.Term {
	raw := get(obj, key)
	if isNull(raw) {
		return nil
	}
	l, ok := elems(raw)
	if !ok {
		r.fail("decision.%s is %s, want an array", key, typeName(raw))
	}
	return l
}

func (r *reader) str(m ast.Object, key string) string {
	raw := get(m, key)
	if raw == nil {
		return ""
	}
	s, ok := raw.(ast.String)
	if !ok {
		r.fail("%s is %s, want a string", key, typeName(raw))
	}
	return string(s)
}

// boolean reads m[key]; prefix names m in messages ("decision").
func (r *reader) boolean(m ast.Object, prefix, key string, required bool) bool {
	raw := get(m, key)
	if raw == nil {
		if required {
			r.fail("%s.%s is missing", prefix, key)
		}
		return false
	}
	b, ok := raw.(ast.Boolean)
	if !ok {
		r.fail("%s.%s is %s, want a boolean", prefix, key, typeName(raw))
	}
	return bool(b)
}

func (r *reader) integer(m ast.Object, key string) int {
	return r.integerAt(m, "directives", key)
}

// integerAt reads m[key]; prefix names m in messages.
func (r *reader) integerAt(m ast.Object, prefix, key string) int {
	raw := get(m, key)
	if raw == nil {
		return 0
	}
	return r.number(raw, func() string { return prefix }, key)
}

// number reads raw, the value of key in what field names, as a whole
// number.
func (r *reader) number(raw ast.Value, field func() string, key string) int {
	n, ok := raw.(ast.Number)
	if !ok {
		r.fail("%s.%s is %s, want a number", field(), key, typeName(raw))
		return 0
	}
	i, ok := n.Int()
	if !ok {
		r.fail("%s.%s is %v, want a whole number", field(), key, raw)
	}
	return i
}

func (r *reader) strings(m ast.Object, key string) map[string]string {
	raw := get(m, key)
	if isNull(raw) {
		return nil
	}
	obj := r.object(raw, "directives."+key)
	if obj == nil {
		return nil
	}
	out := make(map[string]string, obj.Len())
	obj.Foreach(func(kt, vt *ast.Term) {
		k, ok := kt.Value.(ast.String)
		if !ok { // as its JSON form names it
			k = ast.String(kt.Value.String())
		}
		s, ok := vt.Value.(ast.String)
		if !ok {
			r.fail("directives.%s[%q] is %s, want a string", key, string(k), typeName(vt.Value))
		}
		out[string(k)] = string(s)
	})
	return out
}

func (r *reader) directives(m ast.Object) Directives {
	d := r.directiveFields(m)
	if d.Tier == d.PriorityClass {
		d.Tier = "" // the class is the tier (Directives.TierName)
	}
	return d
}

func (r *reader) directiveFields(m ast.Object) Directives {
	return Directives{
		Scheduler:      r.str(m, "scheduler"),
		Queue:          r.str(m, "queue"),
		PriorityClass:  r.str(m, "priorityClass"),
		Tier:           r.str(m, "tier"),
		Preemptible:    r.boolean(m, "directives", "preemptible", false),
		GangMin:        r.integer(m, "gangMin"),
		RequiredLevel:  r.str(m, "requiredLevel"),
		RequiredLabel:  r.str(m, "requiredLabel"),
		RequiredTier:   r.integer(m, "requiredTier"),
		PreferredLevel: r.str(m, "preferredLevel"),
		PreferredLabel: r.str(m, "preferredLabel"),
		PreferredTier:  r.integer(m, "preferredTier"),
		TopologyName:   r.str(m, "topologyName"),
		Labels:         r.strings(m, "labels"),
		Annotations:    r.strings(m, "annotations"),
		Placement:      r.placement(m),
	}
}

// placement reads directives.placement, present only for tenants with
// placement rules.
func (r *reader) placement(m ast.Object) *Placement {
	raw := get(m, "placement")
	if isNull(raw) {
		return nil
	}
	v, err := ast.JSON(raw)
	if err != nil {
		r.fail("directives.placement: %v", err)
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		r.fail("directives.placement: %v", err)
		return nil
	}
	var p Placement
	if err := json.Unmarshal(b, &p); err != nil {
		r.fail("directives.placement is malformed: %v", err)
		return nil
	}
	return &p
}

// relied reads decision.relied: the quota limits the decision relied on
// (mandate.quota.relied). It runs on every admission: field names are
// only built for an error.
func (r *reader) relied(obj ast.Object) []ledger.Limit {
	list := r.list(obj, "relied")
	if len(list) == 0 {
		return nil
	}
	out := make([]ledger.Limit, len(list))
	for i, item := range list {
		m, ok := item.Value.(ast.Object)
		if !ok {
			r.fail("decision.relied[%d] is %s, want an object", i, typeName(item.Value))
			return nil
		}
		lim := &out[i]
		var ir reader
		lim.Tenant = ir.text(m, "tenant")
		lim.Key = ir.text(m, "usage")
		lim.Ceiling = ir.integerAt(m, "", "ceiling")
		lim.Guaranteed = ir.integerAt(m, "", "guaranteed")
		lim.Demand = ir.integerAt(m, "", "demand")
		seen, ok := get(m, "seen").(ast.Object)
		if !ok {
			ir.fail(".seen is %s, want an object", typeName(get(m, "seen")))
		}
		lim.Seen = ledger.Usage{Total: ir.integerAt(seen, ".seen", "total"), NonPreemptible: ir.integerAt(seen, ".seen", "nonPreemptible")}
		lim.Busy = ir.flag(m, "busy")
		lim.OverGuarantee = ir.flag(m, "overGuarantee")
		if ir.err != nil {
			r.fail("decision.relied[%d]%v", i, ir.err)
			return nil
		}
	}
	return out
}

// text reads the string m[key] ("" when missing); messages name it ".key".
func (r *reader) text(m ast.Object, key string) string {
	raw := get(m, key)
	s, ok := raw.(ast.String)
	if !ok && !isNull(raw) {
		r.fail(".%s is %s, want a string", key, typeName(raw))
	}
	return string(s)
}

// flag reads the boolean m[key], which must be there; messages name it
// ".key" (the caller prefixes where m is).
func (r *reader) flag(m ast.Object, key string) bool {
	raw := get(m, key)
	if raw == nil {
		r.fail(".%s is missing", key)
		return false
	}
	b, ok := raw.(ast.Boolean)
	if !ok {
		r.fail(".%s is %s, want a boolean", key, typeName(raw))
	}
	return bool(b)
}
