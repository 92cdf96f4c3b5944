package workload

import "github.com/mandate-dev/mandate/scheduler/facts"

// PreemptibilityKey is one scheduler's native key by which a workload says
// whether it may be preempted (facts.Scheduler.Preemptibility). The
// normaliser reads these keys as the workload's request
// (Workload.RequestedPreemptible), so the policies never name a
// scheduler's keys; the scheduler adapters write them from the decision.
type PreemptibilityKey = facts.Preemptibility

// requestedPreemptibility is what the object's own labels and annotations
// ask for through any scheduler's key, and which key=value asks it; nil
// when none does. Asking to be non-preemptible wins over asking to be
// preemptible, since that is the claim the authority model must check.
func requestedPreemptibility(labels, annotations map[string]string) (*bool, string) {
	var asked *bool
	var by string
	for _, k := range facts.PreemptibilityKeys() {
		from := annotations
		if k.IsLabel() {
			from = labels
		}
		for _, preemptible := range []bool{false, true} {
			if v, ok := from[k.Name]; ok && v == k.Value(preemptible) && (asked == nil || (*asked && !preemptible)) {
				p := preemptible
				asked, by = &p, k.Name+"="+v
			}
		}
	}
	return asked, by
}
