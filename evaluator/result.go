package evaluator

import (
	"encoding/json"
	"fmt"
)

// decodeDecision reads the generic value of data.mandate.decision into a
// Decision, field by field, so a policy that returns the wrong shape gets an
// error naming the field.
func decodeDecision(v any) (Decision, error) {
	var d Decision
	obj, ok := v.(map[string]any)
	if !ok {
		return d, fmt.Errorf("decision is %T, want an object", v)
	}
	allowed, ok := obj["allowed"].(bool)
	if !ok {
		return d, fmt.Errorf("decision.allowed is %T, want a boolean", obj["allowed"])
	}
	d.Allowed = allowed
	for _, field := range []struct {
		name string
		dst  any
	}{
		{"violations", &d.Violations},
		{"warnings", &d.Warnings},
		{"directives", &d.Directives},
		{"explanations", &d.Explanations},
	} {
		raw, ok := obj[field.name]
		if !ok {
			continue
		}
		if err := remarshal(raw, field.dst); err != nil {
			return d, fmt.Errorf("decision.%s: %w", field.name, err)
		}
	}
	if !d.Allowed && len(d.Violations) == 0 {
		return d, fmt.Errorf("decision denies without a violation: a person could not tell why")
	}
	return d, nil
}

func remarshal(src, dst any) error {
	b, err := json.Marshal(src)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}
