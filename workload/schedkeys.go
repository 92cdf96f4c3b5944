package workload

import (
	"slices"
	"strconv"
	"strings"

	"github.com/mandate-dev/mandate/scheduler/facts"
)

// What a scheduler's native key asks for, in the authority model's terms
// (the registry's words, package facts).
const (
	AsksQueue         = facts.AsksQueue
	AsksPriorityClass = facts.AsksPriorityClass
	AsksGangMin       = facts.AsksGangMin
)

// SchedulerKey is one scheduler key the submitted object sets itself: a
// request the authority model decides on.
type SchedulerKey struct {
	// Key names the key and where it is, as a person would find it:
	// "label kai.scheduler/queue", "annotation
	// scheduling.volcano.sh/queue-name", "spec.minAvailable".
	Key string `json:"key"`
	// Asks is what the key asks for: AsksQueue, AsksPriorityClass or
	// AsksGangMin.
	Asks string `json:"asks"`
	// Value is the value asked, as written.
	Value string `json:"value"`
}

// readSchedulerKeys records the schedulers' native keys obj sets itself
// (its own labels and annotations, and those of its pod templates) that
// the registry lists as requests (facts.Scheduler.Requests), and applies
// those the normaliser honours: a priority class key is the class asked
// when no pod template names one (a different class in a template is a
// contradiction, ErrInvalid); a gang minimum key (read from a top owner
// only: on a pod of a controller it is the owner's, which Mandate copies
// onto its pods, not a request of the pod's own) is the elastic minimum
// when none is declared otherwise and it is within the gang.
// Keys are listed in a fixed order — queue, priority class, gang minimum;
// labels, then annotations, then pod templates' annotations — so the
// Workload is deterministic.
func readSchedulerKeys(w *Workload, labels, annotations map[string]string, templateAnnotations []map[string]string) error {
	var keys []SchedulerKey
	for _, r := range requestKeys() {
		var values []string
		switch r.Place {
		case facts.Label:
			if v, ok := labels[r.Name]; ok {
				values = append(values, v)
			}
		case facts.Annotation:
			if v, ok := annotations[r.Name]; ok {
				values = append(values, v)
			}
		default:
			for _, from := range append([]map[string]string{annotations}, templateAnnotations...) {
				if v, ok := from[r.Name]; ok && !slices.Contains(values, v) {
					values = append(values, v)
				}
			}
		}
		if r.Asks == AsksGangMin && w.Owner != nil {
			continue
		}
		for _, v := range values {
			keys = append(keys, SchedulerKey{Key: r.Describe(), Asks: r.Asks, Value: v})
		}
		if len(values) == 0 {
			continue
		}
		v := values[0]
		switch r.Asks {
		case AsksPriorityClass:
			switch {
			case v == "":
			case w.PriorityClass == "":
				w.PriorityClass = v
			case w.PriorityClass != v:
				return invalidf("%s=%s asks for priority class %q but the pod template's spec.priorityClassName is %q: set one class",
					r.Describe(), v, v, w.PriorityClass)
			}
		case AsksGangMin:
			// A minimum within the gang is its elastic minimum; any other
			// value is left to the model, whose gang minimum overrides it,
			// and says so.
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 1 && n <= w.Pods && w.MinPods == 0 {
				w.MinPods = n
			}
		}
	}
	w.SchedulerKeys = append(w.SchedulerKeys, keys...)
	return nil
}

// requestKeys lists every registered scheduler's request keys in the order
// readSchedulerKeys records them.
func requestKeys() []facts.Request {
	var out []facts.Request
	for _, s := range facts.All() {
		out = append(out, s.Requests...)
	}
	asks := map[string]int{AsksQueue: 0, AsksPriorityClass: 1, AsksGangMin: 2}
	slices.SortStableFunc(out, func(a, b facts.Request) int {
		if asks[a.Asks] != asks[b.Asks] {
			return asks[a.Asks] - asks[b.Asks]
		}
		return int(a.Place) - int(b.Place)
	})
	return out
}
