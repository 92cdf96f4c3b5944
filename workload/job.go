package workload

import (
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// JobGVK is batch/v1 Job.
var JobGVK = batchv1.SchemeGroupVersion.WithKind("Job")

func init() {
	Register(Kind{GVK: JobGVK, Resource: "jobs", Label: "Job", GangOwner: true, Normalise: normaliseJob, Suspend: []string{"spec", "suspend"},
		Finished: Finished{Conditions: []string{"Complete", "Failed"}}})
}

// normaliseJob: a batch/v1 Job runs spec.parallelism pods at once (default
// 1), fewer when spec.completions is smaller; its one role is "main" and its
// class batch. A Job has no native elastic minimum.
func normaliseJob(obj *unstructured.Unstructured) (Workload, error) {
	parallelism, found, err := intField(obj.Object, 0, MaxPods, "spec.parallelism", "spec", "parallelism")
	if err != nil {
		return Workload{}, err
	}
	if !found {
		parallelism = 1
	}
	completions, found, err := intField(obj.Object, 0, MaxPods, "spec.completions", "spec", "completions")
	if err != nil {
		return Workload{}, err
	}
	if found {
		parallelism = min(parallelism, completions)
	}
	var job batchv1.Job
	if err := toTyped(obj.Object, &job, "Job"); err != nil {
		return Workload{}, err
	}
	w := Workload{Class: ClassBatch}
	err = fromPodSets(&w, []podSet{{
		Name:     "main",
		Replicas: parallelism,
		Pointer:  "/spec/template",
		Field:    "spec.template",
		Template: job.Spec.Template,
	}})
	return w, err
}
