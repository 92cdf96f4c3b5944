package scheduler

import (
	"slices"
	"strings"

	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/workload"
)

// OwnedLabels and OwnedAnnotations are the schedulers' keys the adapters
// write from a decision and the scheduler reads from the object or its
// pods: who runs, in which queue, at which priority, preemptible or not,
// in which gang and topology. Every registered scheduler's (package facts),
// except the pod-set annotations a scheduler reads only from the workload.
// Read only.
var OwnedLabels, OwnedAnnotations = ownedKeys()

func ownedKeys() (labels, annotations []string) {
	for _, s := range facts.All() {
		for _, k := range s.Keys() {
			switch k.Place {
			case facts.Label:
				labels = append(labels, k.Name)
			case facts.Annotation, facts.PodAnnotation:
				annotations = append(annotations, k.Name)
			}
		}
	}
	return labels, annotations
}

// ChangedOwnedKeys lists the labels and annotations of Mandate's own keys
// (workload.KeyPrefix, and the scheduler keys its adapters write) whose value
// differs between two versions of an object's metadata, as "label k" or
// "annotation k", sorted. The quota ledger, the schedulers and the gang
// controller read these keys: changed after admission, they would let a
// workload run under terms the authority model never granted.
func ChangedOwnedKeys(oldLabels, newLabels, oldAnnotations, newAnnotations map[string]string) []string {
	var out []string
	diff := func(what string, old, cur map[string]string, fixed []string) {
		seen := map[string]bool{}
		for _, m := range []map[string]string{old, cur} {
			for k := range m {
				if seen[k] || !(strings.HasPrefix(k, workload.KeyPrefix) || slices.Contains(fixed, k)) {
					continue
				}
				seen[k] = true
				ov, oldHas := old[k]
				nv, newHas := cur[k]
				if ov != nv || oldHas != newHas {
					out = append(out, what+" "+k)
				}
			}
		}
	}
	diff("label", oldLabels, newLabels, OwnedLabels)
	diff("annotation", oldAnnotations, newAnnotations, OwnedAnnotations)
	slices.Sort(out)
	return out
}
