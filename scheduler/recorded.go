package scheduler

import (
	"encoding/json"
	"fmt"

	"github.com/mandate-dev/mandate/evaluator"
)

// Marks is the AnnotationDirectives value that records d.
func Marks(d evaluator.Directives) (string, error) {
	marks, err := json.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("unable to record directives: %w", err)
	}
	return string(marks), nil
}

// RecordedDirectives reads the directives Mandate recorded on an object it
// admitted (AnnotationDirectives) from the object's annotations. ok is
// false when there are none; an error when they cannot be read.
func RecordedDirectives(annotations map[string]string) (evaluator.Directives, bool, error) {
	raw, ok := annotations[AnnotationDirectives]
	if !ok {
		return evaluator.Directives{}, false, nil
	}
	var d evaluator.Directives
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		return evaluator.Directives{}, false, fmt.Errorf("unreadable %s: %w", AnnotationDirectives, err)
	}
	return d, true, nil
}
