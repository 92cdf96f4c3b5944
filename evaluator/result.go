package evaluator

import (
	"fmt"

	"github.com/mandate-dev/mandate/ledger"
)

// decodeDecision reads the generic values of the decision (and, when asked
// for, the explanations) field by field, so that a policy returning the
// wrong shape gets an error naming the field. No JSON round trip: this runs
// on every admission.
func decodeDecision(v, explanations any) (Decision, error) {
	var d Decision
	obj, ok := v.(map[string]any)
	if !ok {
		return d, fmt.Errorf("decision is %T, want an object", v)
	}
	r := reader{}
	d.Allowed = r.boolean(obj, "decision", "allowed", true)
	d.Violations = r.violations(obj, "violations")
	d.Warned = r.violations(obj, "warned")
	d.DryRun = r.violations(obj, "dryrun")
	d.Reasons = r.violations(obj, "reasons")
	for i, item := range r.list(obj, "warnings") {
		s, ok := item.(string)
		if !ok {
			r.fail("decision.warnings[%d] is %T, want a string", i, item)
		}
		d.Warnings = append(d.Warnings, s)
	}
	if raw, ok := obj["directives"]; ok {
		d.Directives = r.directives(r.object(raw, "decision.directives"))
	}
	if _, ok := obj["relied"]; ok {
		d.ReliedKnown = true
		d.Relied = r.relied(obj)
	}
	if explanations != nil {
		list, ok := explanations.([]any)
		if !ok {
			r.fail("explanations is %T, want an array", explanations)
		}
		for i, item := range list {
			m := r.object(item, fmt.Sprintf("explanations[%d]", i))
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

// violations reads the list of violations at obj[key]; each one's
// enforcement, when set, must be an action.
func (r *reader) violations(obj map[string]any, key string) []Violation {
	list := r.list(obj, key)
	if len(list) == 0 {
		return nil
	}
	out := make([]Violation, 0, len(list))
	for i, item := range list {
		field := fmt.Sprintf("decision.%s[%d]", key, i)
		m := r.object(item, field)
		v := Violation{
			Code:        r.str(m, "code"),
			Dimension:   Dimension(r.str(m, "dimension")),
			Message:     r.str(m, "message"),
			Enforcement: r.str(m, "enforcement"),
		}
		switch v.Enforcement {
		case "", EnforceDeny, EnforceWarn, EnforceDryRun:
		default:
			r.fail("%s.enforcement is %q, want %s, %s or %s", field, v.Enforcement, EnforceDeny, EnforceWarn, EnforceDryRun)
		}
		r.facts(m, field, &v)
		out = append(out, v)
	}
	return out
}

// facts reads the facts and the warning text of violation m (field names
// it in messages); keys it does not know are left alone (a custom rule's
// own). One pass over the keys the violation has, not a lookup per fact.
func (r *reader) facts(m map[string]any, field string, v *Violation) {
	for k, raw := range m {
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
			list, ok := raw.([]any)
			if !ok {
				r.fail("%s.classes is %T, want an array", field, raw)
				continue
			}
			v.Classes = make([]string, len(list))
			for i, c := range list {
				if v.Classes[i], ok = c.(string); !ok {
					r.fail("%s.classes[%d] is %T, want a string", field, i, c)
				}
			}
			continue
		default:
			continue
		}
		if s != nil {
			var ok bool
			if *s, ok = raw.(string); !ok {
				r.fail("%s.%s is %T, want a string", field, k, raw)
			}
			continue
		}
		*n = r.integerAt(m, field, k)
	}
}

// reader keeps the first shape error it meets; later reads return zero values.
type reader struct{ err error }

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *reader) object(v any, field string) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		r.fail("%s is %T, want an object", field, v)
	}
	return m
}

func (r *reader) list(obj map[string]any, key string) []any {
	raw, ok := obj[key]
	if !ok || raw == nil {
		return nil
	}
	l, ok := raw.([]any)
	if !ok {
		r.fail("decision.%s is %T, want an array", key, raw)
	}
	return l
}

func (r *reader) str(m map[string]any, key string) string {
	raw, ok := m[key]
	if !ok {
		return ""
	}
	s, ok := raw.(string)
	if !ok {
		r.fail("%s is %T, want a string", key, raw)
	}
	return s
}

// boolean reads m[key]; prefix names m in messages ("decision").
func (r *reader) boolean(m map[string]any, prefix, key string, required bool) bool {
	field := prefix + "." + key
	raw, ok := m[key]
	if !ok {
		if required {
			r.fail("%s is missing", field)
		}
		return false
	}
	b, ok := raw.(bool)
	if !ok {
		r.fail("%s is %T, want a boolean", field, raw)
	}
	return b
}

func (r *reader) integer(m map[string]any, key string) int {
	return r.integerAt(m, "directives", key)
}

// integerAt reads m[key]; prefix names m in messages.
func (r *reader) integerAt(m map[string]any, prefix, key string) int {
	raw, ok := m[key]
	if !ok {
		return 0
	}
	switch n := raw.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	case interface{ Int64() (int64, error) }: // json.Number
		i, err := n.Int64()
		if err != nil {
			r.fail("%s.%s is %v, want a whole number", prefix, key, raw)
		}
		return int(i)
	}
	r.fail("%s.%s is %T, want a number", prefix, key, raw)
	return 0
}

func (r *reader) strings(m map[string]any, key string) map[string]string {
	raw, ok := m[key]
	if !ok || raw == nil {
		return nil
	}
	obj := r.object(raw, "directives."+key)
	out := make(map[string]string, len(obj))
	for k, v := range obj {
		s, ok := v.(string)
		if !ok {
			r.fail("directives.%s[%q] is %T, want a string", key, k, v)
		}
		out[k] = s
	}
	return out
}

func (r *reader) directives(m map[string]any) Directives {
	return Directives{
		Scheduler:      r.str(m, "scheduler"),
		Queue:          r.str(m, "queue"),
		PriorityClass:  r.str(m, "priorityClass"),
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
	}
}

// relied reads decision.relied: the quota limits the decision relied on
// (mandate.quota.relied). It runs on every admission: field names are
// only built for an error.
func (r *reader) relied(obj map[string]any) []ledger.Limit {
	list := r.list(obj, "relied")
	if len(list) == 0 {
		return nil
	}
	out := make([]ledger.Limit, len(list))
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			r.fail("decision.relied[%d] is %T, want an object", i, item)
			return nil
		}
		lim := &out[i]
		var ir reader
		lim.Tenant = ir.text(m, "tenant")
		lim.Key = ir.text(m, "usage")
		lim.Ceiling = ir.integerAt(m, "", "ceiling")
		lim.Guaranteed = ir.integerAt(m, "", "guaranteed")
		lim.Demand = ir.integerAt(m, "", "demand")
		seen, ok := m["seen"].(map[string]any)
		if !ok {
			ir.fail(".seen is %T, want an object", m["seen"])
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
func (r *reader) text(m map[string]any, key string) string {
	s, ok := m[key].(string)
	if !ok && m[key] != nil {
		r.fail(".%s is %T, want a string", key, m[key])
	}
	return s
}

// flag reads the boolean m[key], which must be there; messages name it
// ".key" (the caller prefixes where m is).
func (r *reader) flag(m map[string]any, key string) bool {
	raw, ok := m[key]
	if !ok {
		r.fail(".%s is missing", key)
		return false
	}
	b, ok := raw.(bool)
	if !ok {
		r.fail(".%s is %T, want a boolean", key, raw)
	}
	return b
}
