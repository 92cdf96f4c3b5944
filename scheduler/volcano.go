package scheduler

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/workload"
)

// Volcano's keys, as the registry (package facts) declares them.
var (
	// VolcanoSchedulerName is the pods' spec.schedulerName.
	VolcanoSchedulerName = facts.Volcano.SchedulerName
	// AnnotationGroupName names the PodGroup a pod belongs to; Volcano never
	// schedules a pod without one, and its own pod-group controller leaves
	// annotated pods alone.
	AnnotationGroupName = facts.Volcano.GroupName.Name
	// AnnotationQueueName names the pod's Volcano queue.
	AnnotationQueueName = facts.Volcano.Queue.Name
)

func init() { Register(Volcano, applyVolcano) }

// applyVolcano sets, on every pod template, spec.schedulerName volcano, the queue
// and preemptable annotations, and the group-name annotation naming the
// PodGroup Mandate keeps for the gang (PodGroupName). Only a pod a
// controller created (one with a controlling owner) keeps a group it
// already names: that group was set by Mandate at the owner's admission or
// by a controller that keeps its own PodGroups (Volcano's job controller,
// Kubeflow's training operator). Whatever a user submits directly gets
// Mandate's group, so a tenant cannot pick a PodGroup, and with it a queue,
// that the authority model did not assign.
//
// A Volcano Job is different: Volcano's job controller owns its PodGroup, so
// Apply sets no group-name and instead writes the job's own spec fields:
// schedulerName, queue, priorityClassName, networkTopology, and minAvailable
// when the model sets a gang minimum (the job's own minAvailable, read as
// its elastic minimum, is what the model keeps unless it decides otherwise).
//
// A gang of more than one pod whose required (else preferred) level is the
// node, which no networkTopology tier names, gets on every pod template the
// label LabelGang=PodGroupName and a pod affinity among the pods carrying
// it on the level's node label (kubernetes.io/hostname in the example
// model): required for a required level, preferred for a preferred one.
func applyVolcano(obj *unstructured.Unstructured, w workload.Workload, d evaluator.Directives) error {
	if err := validateName("Volcano queue", d.Queue); err != nil {
		return err
	}
	topology, err := networkTopology(d)
	if err != nil {
		return err
	}
	isVolcanoJob := obj.GroupVersionKind() == workload.VolcanoJobGVK
	group := ""
	if !isVolcanoJob {
		if group = PodGroupName(w); group == "" {
			return fmt.Errorf("%w: %s has no name yet (only generateName %q) to name its PodGroup after",
				ErrInvalidDirectives, w.Kind, w.GenerateName)
		}
	}
	templates, err := applyCommon(obj, w, d)
	if err != nil {
		return err
	}
	for _, t := range templates {
		t.setSchedulerName(VolcanoSchedulerName)
		if _, named := t.annotation(AnnotationGroupName); group != "" && !(named && w.Owner != nil) {
			t.setAnnotation(AnnotationGroupName, group)
		}
		if d.Queue != "" {
			t.setAnnotation(AnnotationQueueName, d.Queue)
		}
		t.setAnnotation(facts.Volcano.Preemptibility.Name, facts.Volcano.Preemptibility.Value(d.Preemptible))
	}
	if l, ok := volcanoNodeLevel(w, d); ok {
		for _, t := range templates {
			l.apply(t)
		}
	}
	if !isVolcanoJob {
		return nil
	}
	spec := ensureMap(obj.Object, "spec")
	spec["schedulerName"] = VolcanoSchedulerName
	if d.Queue != "" {
		spec["queue"] = d.Queue
	}
	if d.PriorityClass != "" {
		spec["priorityClassName"] = d.PriorityClass
	}
	if d.GangMin > 0 {
		// The model's gang minimum: the job's own minAvailable is its
		// elastic minimum unless mandate.dev/min-available says otherwise,
		// and the policy warns when it overrides it.
		spec["minAvailable"] = int64(d.GangMin)
	}
	if topology != nil {
		spec["networkTopology"] = topology
	}
	return nil
}

// networkTopology renders the topology directives as Volcano's
// networkTopology (Job and PodGroup share the shape): hard up to the
// required level's tier when one is required, else soft up to the preferred
// level's tier; nil when neither is set. Tier 0 is the node itself, below
// Volcano's lowest HyperNode tier: a gang confined to one node gets no
// networkTopology, and Apply keeps its pods together with a pod affinity
// among them on the level's node label instead (volcanoNodeLevel).
func networkTopology(d evaluator.Directives) (map[string]any, error) {
	mode, level, tier := "", "", 0
	switch {
	case d.RequiredLevel != "":
		mode, level, tier = "hard", d.RequiredLevel, d.RequiredTier
	case d.PreferredLevel != "":
		mode, level, tier = "soft", d.PreferredLevel, d.PreferredTier
	default:
		return nil, nil
	}
	switch {
	case tier < 0:
		return nil, fmt.Errorf("%w: topology level %q has tier %d; tiers count up from 0 (the node)", ErrInvalidDirectives, level, tier)
	case tier == 0:
		return nil, nil
	}
	return map[string]any{"mode": mode, "highestTierAllowed": int64(tier)}, nil
}

// maxNameLen is the longest PodGroup name PodGroupName returns: a DNS-1123
// label, so it also fits label values.
const maxNameLen = 63

// PodGroupName names the Volcano PodGroup Mandate keeps for a gang:
// "mandate-<kind>-<name>" lowercased, where a Pod with a controlling owner
// joins its owner's group. Characters a DNS-1123 label does not allow become
// "-"; when that changed the name, or it is longer than 63 characters, the
// name is cut and ends with a hash of the full one so distinct gangs keep
// distinct groups. It is "" when there is no name yet (generateName only).
func PodGroupName(w workload.Workload) string {
	kind, name := w.Kind, w.Name
	if w.Kind == "Pod" && w.Owner != nil && w.Owner.Name != "" {
		kind, name = w.Owner.Kind, w.Owner.Name
	}
	if name == "" {
		return ""
	}
	full := "mandate-" + strings.ToLower(kind) + "-" + name
	clean := dnsLabel(full)
	if clean == full && len(clean) <= maxNameLen {
		return clean
	}
	sum := sha256.Sum256([]byte(full))
	suffix := "-" + hex.EncodeToString(sum[:])[:10]
	clean = strings.TrimRight(clean[:min(len(clean), maxNameLen-len(suffix))], "-")
	return clean + suffix
}

// dnsLabel maps s onto the DNS-1123 label alphabet [a-z0-9-].
func dnsLabel(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	return string(b)
}
