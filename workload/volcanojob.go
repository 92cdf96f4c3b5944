package workload

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/mandate-dev/mandate/scheduler/facts"
)

// VolcanoJobGVK is Volcano's own gang job, batch.volcano.sh/v1alpha1 Job.
var VolcanoJobGVK = vcbatch.SchemeGroupVersion.WithKind("Job")

func init() {
	Register(Kind{GVK: VolcanoJobGVK, Resource: "jobs", Label: "VolcanoJob", GangOwner: true, VolcanoNative: true, Normalise: normaliseVolcanoJob,
		Shape:    Shape{Fields: []string{"tasks"}},
		Finished: Finished{PhasePath: []string{"status", "state", "phase"}, Phases: []string{"Completed", "Failed", "Terminated", "Aborted"}}})
}

// normaliseVolcanoJob: one role per task, in task order; each runs
// spec.tasks[i].replicas pods (0 when absent, as in Volcano). The elastic
// minimum is spec.minAvailable (0, Volcano's "all pods", counts as none).
// spec.schedulerName and spec.priorityClassName, which Volcano's job
// controller applies to the whole gang, win over the task templates'.
// spec.queue is a request unless it is Volcano's default queue
// (facts.Volcano.DefaultQueue), which the CRD writes into every Job that
// names none before the webhook sees it: a Job naming no queue and one
// naming "default" reach Mandate alike, and the model's queue replaces
// either without an override warning. The class is training.
func normaliseVolcanoJob(obj *unstructured.Unstructured) (Workload, error) {
	// Counts first, from the raw object: the typed conversion would wrap
	// out-of-range integers silently.
	tasks, _ := mapField(obj.Object, "spec")["tasks"].([]any)
	replicas := make([]int, len(tasks))
	for i, task := range tasks {
		raw, _ := task.(map[string]any)
		n, _, err := intField(raw, 0, MaxPods, fmt.Sprintf("spec.tasks[%d].replicas", i), "replicas")
		if err != nil {
			return Workload{}, err
		}
		replicas[i] = n
	}
	minAvailable, _, err := intField(obj.Object, 0, MaxPods, "spec.minAvailable", "spec", "minAvailable")
	if err != nil {
		return Workload{}, err
	}

	var job vcbatch.Job
	if err := toTyped(obj.Object, &job, "Volcano Job"); err != nil {
		return Workload{}, err
	}
	if len(tasks) == 0 || len(job.Spec.Tasks) != len(tasks) {
		return Workload{}, missingField("spec.tasks", "a Volcano Job has at least one task")
	}
	sets := make([]podSet, 0, len(tasks))
	for i, task := range job.Spec.Tasks {
		name := task.Name
		if name == "" {
			name = fmt.Sprintf("default%d", i) // as Volcano's admission defaults it
		}
		sets = append(sets, podSet{
			Name:     name,
			Replicas: replicas[i],
			Pointer:  fmt.Sprintf("/spec/tasks/%d/template", i),
			Field:    fmt.Sprintf("spec.tasks[%d].template", i),
			Template: task.Template,
		})
	}
	w := Workload{
		Class:         ClassTraining,
		PriorityClass: job.Spec.PriorityClassName,
		Scheduler:     job.Spec.SchedulerName,
	}
	if err := fromPodSets(&w, sets); err != nil {
		return Workload{}, err
	}
	if minAvailable > w.Pods {
		return Workload{}, invalidField("spec.minAvailable", minAvailable,
			fmt.Sprintf("must be a whole number from 0 to the %d replicas of all tasks", w.Pods))
	}
	w.MinPods = minAvailable
	if job.Spec.Queue != "" && job.Spec.Queue != facts.Volcano.DefaultQueue {
		w.SchedulerKeys = append(w.SchedulerKeys, SchedulerKey{Key: "spec.queue", Asks: AsksQueue, Value: job.Spec.Queue})
	}
	if minAvailable > 0 {
		w.SchedulerKeys = append(w.SchedulerKeys, SchedulerKey{Key: "spec.minAvailable", Asks: AsksGangMin, Value: strconv.Itoa(minAvailable)})
	}
	return w, nil
}
