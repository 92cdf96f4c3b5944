package scheduler

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/workload"
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

// UnrecordedKeys returns keys without those that only repeat what the
// recorded directives told the scheduler (the same queue or gang minimum):
// on an object Mandate admitted, those are its own marks, not the user
// asking. A priority class is always the class asked, wherever it is read.
func UnrecordedKeys(keys []workload.SchedulerKey, recorded evaluator.Directives) []workload.SchedulerKey {
	var out []workload.SchedulerKey
	for _, k := range keys {
		switch {
		case k.Asks == workload.AsksQueue && k.Value == recorded.Queue:
		case k.Asks == workload.AsksGangMin && recorded.GangMin > 0 && k.Value == strconv.Itoa(recorded.GangMin):
		default:
			out = append(out, k)
		}
	}
	return out
}
