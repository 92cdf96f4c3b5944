package scheduler

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/workload"
)

// KAI Scheduler's keys, as the registry (package facts) declares them. Its
// podgrouper builds the PodGroup from the top owner's labels and
// annotations.
var (
	// KAISchedulerName is the pods' spec.schedulerName.
	KAISchedulerName = facts.KAI.SchedulerName
	// LabelKAIQueue names the KAI queue of the top owner.
	LabelKAIQueue = facts.KAI.Queue.Name
	// LabelKAIPriorityClass names the top owner's priority class.
	LabelKAIPriorityClass = facts.KAI.PriorityClass.Name
	// AnnotationKAITopology names the KAI Topology CR the placement keys
	// refer to.
	AnnotationKAITopology = facts.KAI.Topology.Name
	// AnnotationKAIRequiredPlacement and AnnotationKAIPreferredPlacement
	// carry node labels of that topology's levels.
	AnnotationKAIRequiredPlacement  = facts.KAI.RequiredTopology.Name
	AnnotationKAIPreferredPlacement = facts.KAI.PreferredTopology.Name
	// AnnotationKAIBatchMinMember makes a workload a gang of at least that
	// many pods (a batch/v1 Job is no gang without it).
	AnnotationKAIBatchMinMember = facts.KAI.GangMin.Name
)

func init() { Register(KAI, applyKAI) }

// applyKAI labels and annotates the object itself, the top owner KAI's
// podgrouper reads (a Job, a PyTorchJob, or a bare Pod): queue, priority
// class and preemptibility labels; topology, required and preferred
// placement annotations when set; batch-min-member when the gang minimum is
// more than one pod. Each pod template gets spec.schedulerName
// kai-scheduler.
func applyKAI(obj *unstructured.Unstructured, w workload.Workload, d evaluator.Directives) error {
	labels := map[string]string{facts.KAI.Preemptibility.Name: facts.KAI.Preemptibility.Value(d.Preemptible)}
	if d.Queue != "" {
		labels[LabelKAIQueue] = d.Queue
	}
	if d.PriorityClass != "" {
		labels[LabelKAIPriorityClass] = d.PriorityClass
	}
	for _, k := range sortedKeys(labels) {
		if errs := validation.IsValidLabelValue(labels[k]); len(errs) > 0 {
			return fmt.Errorf("%w: KAI reads %s from a label, and %q is not a valid label value: %v", ErrInvalidDirectives, k, labels[k], errs)
		}
	}
	annotations := map[string]string{}
	for key, value := range map[string]string{
		AnnotationKAITopology:           d.TopologyName,
		AnnotationKAIRequiredPlacement:  d.RequiredLabel,
		AnnotationKAIPreferredPlacement: d.PreferredLabel,
	} {
		if value != "" {
			annotations[key] = value
		}
	}
	if d.GangMin > 1 {
		annotations[AnnotationKAIBatchMinMember] = strconv.Itoa(d.GangMin)
	}
	templates, err := applyCommon(obj, w, d)
	if err != nil {
		return err
	}
	meta := ensureMap(obj.Object, "metadata")
	setAll(meta, "labels", labels)
	setAll(meta, "annotations", annotations)
	for _, t := range templates {
		t.setSchedulerName(KAISchedulerName)
	}
	return nil
}
