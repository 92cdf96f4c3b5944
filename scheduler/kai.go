package scheduler

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/workload"
)

// KAI Scheduler v0.17 keys (see docs/architecture.md, "Scheduler
// contracts"). Its
// podgrouper builds the PodGroup from the top owner's labels and annotations.
const (
	// KAISchedulerName is the pods' spec.schedulerName.
	KAISchedulerName = "kai-scheduler"
	// LabelKAIQueue names the KAI queue of the top owner.
	LabelKAIQueue = "kai.scheduler/queue"
	// LabelKAIPriorityClass names the top owner's priority class.
	LabelKAIPriorityClass = "priorityClassName"
	// AnnotationKAITopology names the KAI Topology CR the placement keys
	// refer to.
	AnnotationKAITopology = "kai.scheduler/topology"
	// AnnotationKAIRequiredPlacement and AnnotationKAIPreferredPlacement
	// carry node labels of that topology's levels.
	AnnotationKAIRequiredPlacement  = "kai.scheduler/topology-required-placement"
	AnnotationKAIPreferredPlacement = "kai.scheduler/topology-preferred-placement"
	// AnnotationKAIBatchMinMember makes a workload a gang of at least that
	// many pods (a batch/v1 Job is no gang without it).
	AnnotationKAIBatchMinMember = "kai.scheduler/batch-min-member"
)

// kaiAdapter renders directives for KAI Scheduler.
type kaiAdapter struct{}

var _ Adapter = kaiAdapter{}

func (kaiAdapter) Name() string { return KAI }

// Apply labels and annotates the object itself, the top owner KAI's
// podgrouper reads (a Job, a PyTorchJob, or a bare Pod): queue, priority
// class and preemptibility labels; topology, required and preferred
// placement annotations when set; batch-min-member when the gang minimum is
// more than one pod. Each pod template gets spec.schedulerName
// kai-scheduler.
func (kaiAdapter) Apply(obj *unstructured.Unstructured, w workload.Workload, d evaluator.Directives) error {
	labels := map[string]string{workload.KAIPreemptibility.Key: workload.KAIPreemptibility.Value(d.Preemptible)}
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
