package workload

import (
	"strconv"
	"strings"
)

// What a scheduler's native key asks for, in the authority model's terms.
const (
	AsksQueue         = "queue"
	AsksPriorityClass = "priorityClass"
	AsksGangMin       = "gangMin"
)

// Schedulers' native keys a user may set on a workload to ask its scheduler
// for a queue, a priority class or a gang minimum. The normaliser reads them
// as the user's request (Workload.SchedulerKeys) so that the authority model
// keeps what it allows and says what it overrides; package scheduler writes
// the same keys from the decision.
const (
	// KAIQueueKey is KAI's queue label on the top owner.
	KAIQueueKey = "kai.scheduler/queue"
	// KAIPriorityClassKey is KAI's priority class label on the top owner.
	KAIPriorityClassKey = "priorityClassName"
	// KAIBatchMinMemberKey is KAI's gang minimum annotation on the top owner.
	KAIBatchMinMemberKey = "kai.scheduler/batch-min-member"
	// VolcanoQueueKey is Volcano's queue annotation on a pod (template).
	VolcanoQueueKey = "scheduling.volcano.sh/queue-name"
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
// (its own labels and annotations, and those of its pod templates) and
// applies those the normaliser honours as requests: KAI's priorityClassName
// label is the priority class asked when no pod template names one (a
// different class in a template is a contradiction, ErrInvalid), KAI's
// batch-min-member (on a top owner) the elastic minimum when none is
// declared otherwise and it is within the gang.
// Keys are listed in a fixed order, so the Workload is deterministic.
func readSchedulerKeys(w *Workload, labels, annotations map[string]string, templateAnnotations []map[string]string) error {
	var keys []SchedulerKey
	if v, ok := labels[KAIQueueKey]; ok {
		keys = append(keys, SchedulerKey{Key: "label " + KAIQueueKey, Asks: AsksQueue, Value: v})
	}
	queues := map[string]bool{}
	for _, from := range append([]map[string]string{annotations}, templateAnnotations...) {
		if v, ok := from[VolcanoQueueKey]; ok && !queues[v] {
			queues[v] = true
			keys = append(keys, SchedulerKey{Key: "annotation " + VolcanoQueueKey, Asks: AsksQueue, Value: v})
		}
	}
	if v, ok := labels[KAIPriorityClassKey]; ok {
		keys = append(keys, SchedulerKey{Key: "label " + KAIPriorityClassKey, Asks: AsksPriorityClass, Value: v})
		switch {
		case v == "":
		case w.PriorityClass == "":
			w.PriorityClass = v
		case w.PriorityClass != v:
			return invalidf("label %s=%s asks for priority class %q but the pod template's spec.priorityClassName is %q: set one class",
				KAIPriorityClassKey, v, v, w.PriorityClass)
		}
	}
	// KAI reads batch-min-member from the top owner only: on a pod of a
	// controller it is the owner's (Mandate copies the owner's directives
	// onto its pods), not a request of the pod's own.
	if v, ok := annotations[KAIBatchMinMemberKey]; ok && w.Owner == nil {
		keys = append(keys, SchedulerKey{Key: "annotation " + KAIBatchMinMemberKey, Asks: AsksGangMin, Value: v})
		// A minimum within the gang is its elastic minimum; any other value
		// is left to the model, whose gang minimum overrides it, and says so.
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 1 && n <= w.Pods && w.MinPods == 0 {
			w.MinPods = n
		}
	}
	w.SchedulerKeys = append(w.SchedulerKeys, keys...)
	return nil
}
