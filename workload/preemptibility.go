package workload

// PreemptibilityKey is one scheduler's native key by which a workload says
// whether it may be preempted. The normaliser reads these keys as the
// workload's request (Workload.RequestedPreemptible), so the policies never
// name a scheduler's keys; the scheduler adapters write them from the
// decision.
type PreemptibilityKey struct {
	// Key is the label or annotation name.
	Key string
	// Label is true for a label, false for an annotation.
	Label bool
	// Preemptible and NonPreemptible are the key's two values.
	Preemptible, NonPreemptible string
}

// The preemptibility keys of the schedulers Mandate renders for: one table,
// read by Normalize and written by package scheduler.
var (
	// KAIPreemptibility is KAI's label on the top owner.
	KAIPreemptibility = PreemptibilityKey{Key: "kai.scheduler/preemptibility", Label: true,
		Preemptible: "preemptible", NonPreemptible: "non-preemptible"}
	// VolcanoPreemptable is Volcano's annotation on a pod (template).
	VolcanoPreemptable = PreemptibilityKey{Key: "volcano.sh/preemptable",
		Preemptible: "true", NonPreemptible: "false"}

	PreemptibilityKeys = []PreemptibilityKey{KAIPreemptibility, VolcanoPreemptable}
)

// Value is the key's value for a preemptibility.
func (k PreemptibilityKey) Value(preemptible bool) string {
	if preemptible {
		return k.Preemptible
	}
	return k.NonPreemptible
}

// requestedPreemptibility is what the object's own labels and annotations
// ask for through any scheduler's key, and which key=value asks it; nil
// when none does. Asking to be non-preemptible wins over asking to be
// preemptible, since that is the claim the authority model must check.
func requestedPreemptibility(labels, annotations map[string]string) (*bool, string) {
	var asked *bool
	var by string
	for _, k := range PreemptibilityKeys {
		from := annotations
		if k.Label {
			from = labels
		}
		for _, preemptible := range []bool{false, true} {
			if v, ok := from[k.Key]; ok && v == k.Value(preemptible) && (asked == nil || (*asked && !preemptible)) {
				p := preemptible
				asked, by = &p, k.Key+"="+v
			}
		}
	}
	return asked, by
}
