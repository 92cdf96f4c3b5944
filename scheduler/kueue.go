package scheduler

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/workload"
)

// Kueue's keys, as the registry (package facts) declares them. Kueue
// admits a suspended workload into a ClusterQueue through the LocalQueue
// its label names (schedsync generates the queues from the same model);
// the pods then run on the default scheduler.
var (
	// LabelKueueQueueName names the workload's LocalQueue.
	LabelKueueQueueName = facts.Kueue.Queue.Name
	// LabelKueuePriorityClass names a WorkloadPriorityClass.
	LabelKueuePriorityClass = facts.Kueue.PriorityClass.Name
	// AnnotationKueueRequiredTopology and AnnotationKueuePreferredTopology,
	// on a pod template, name the node label of a topology level
	// (Topology-Aware Scheduling) the pod set must (or should) fit in.
	AnnotationKueueRequiredTopology  = facts.Kueue.RequiredTopology.Name
	AnnotationKueuePreferredTopology = facts.Kueue.PreferredTopology.Name
)

func init() { Register(Kueue, applyKueue) }

// applyKueue labels the object with its LocalQueue (the directives' queue) and
// WorkloadPriorityClass (the directives' priority class, which the model
// keeps as a PriorityClass of the same name for the pods), and annotates
// each pod template with the required level's node label as Kueue's
// required topology, else the preferred level's as its preferred one
// (Kueue takes one of the two per pod set). A required level of the node
// itself (tier 0) is said too: Kueue's levels include the hostname.
// Pods keep the default scheduler: Kueue admits, kube-scheduler places.
func applyKueue(obj *unstructured.Unstructured, w workload.Workload, d evaluator.Directives) error {
	labels := map[string]string{}
	if d.Queue != "" {
		labels[LabelKueueQueueName] = d.Queue
	}
	if d.PriorityClass != "" {
		labels[LabelKueuePriorityClass] = d.PriorityClass
	}
	for _, k := range sortedKeys(labels) {
		if errs := validation.IsValidLabelValue(labels[k]); len(errs) > 0 {
			return fmt.Errorf("%w: Kueue reads %s from a label, and %q is not a valid label value: %v", ErrInvalidDirectives, k, labels[k], errs)
		}
	}
	templates, err := applyCommon(obj, w, d)
	if err != nil {
		return err
	}
	setAll(ensureMap(obj.Object, "metadata"), "labels", labels)
	for _, t := range templates {
		switch {
		case d.RequiredLabel != "":
			t.setAnnotation(AnnotationKueueRequiredTopology, d.RequiredLabel)
		case d.PreferredLabel != "":
			t.setAnnotation(AnnotationKueuePreferredTopology, d.PreferredLabel)
		}
	}
	return nil
}

// HoldForKueue suspends obj, a workload created for a tenant on a
// scheduler that owns its quota (facts.Scheduler.OwnsQuota: Kueue),
// through its kind's suspend field (workload.Kind.Suspend); false for a
// kind without one. Kueue admits a workload by unsuspending it, and its own
// Job webhook suspends only an object that already carries the queue-name
// label when the webhook runs, which Mandate adds afterwards: without the
// hold, a Job created unsuspended would start its pods before Kueue
// admitted it, counted by Kueue's quota not at all (and, when borrowed,
// by Mandate only once its pods exist). Only on CREATE: a later update carries
// Kueue's own decision.
func HoldForKueue(obj *unstructured.Unstructured) (bool, error) {
	k, ok := workload.Lookup(obj.GroupVersionKind())
	if !ok || len(k.Suspend) == 0 {
		return false, nil
	}
	if err := unstructured.SetNestedField(obj.Object, true, k.Suspend...); err != nil {
		return false, fmt.Errorf("unable to suspend %s %s/%s for Kueue: %w", k.Label, obj.GetNamespace(), obj.GetName(), err)
	}
	return true, nil
}
