package workload

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// JobSetGVK is the Kubernetes JobSet (sigs.k8s.io/jobset v0.10).
var JobSetGVK = schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}

// AnnotationJobSetExclusiveTopology is JobSet's own placement key: one child
// Job per domain of the node label it names.
const AnnotationJobSetExclusiveTopology = "alpha.jobset.sigs.k8s.io/exclusive-topology"

func init() {
	Register(Kind{GVK: JobSetGVK, Resource: "jobsets", Label: "JobSet", GangOwner: true, Normalise: normaliseJobSet, Suspend: []string{"spec", "suspend"},
		Shape: Shape{Fields: []string{"replicatedJobs"}}, Finished: Finished{Conditions: []string{"Completed", "Failed"}}})
}

// normaliseJobSet: one role per replicated job, in order; each runs
// replicas (default 1) Jobs of min(parallelism, completions) pods
// (parallelism default 1), all of which start together. JobSet's
// exclusive-topology annotation (on the JobSet or a replicated job's
// template) names a node label: Topology.RequiredNodeLabel, which the model
// maps to the level with that label. The class is training.
func normaliseJobSet(obj *unstructured.Unstructured) (Workload, error) {
	rjs, _ := mapField(obj.Object, "spec")["replicatedJobs"].([]any)
	if len(rjs) == 0 {
		return Workload{}, missingField("spec.replicatedJobs", "a JobSet has at least one replicated job")
	}
	w := Workload{Class: ClassTraining}
	exclusive := obj.GetAnnotations()[AnnotationJobSetExclusiveTopology]
	sets := make([]podSet, 0, len(rjs))
	for i, raw := range rjs {
		rj, ok := raw.(map[string]any)
		if !ok {
			return Workload{}, invalidf("spec.replicatedJobs[%d] is %s: must be an object", i, jsonType(raw))
		}
		field := fmt.Sprintf("spec.replicatedJobs[%d]", i)
		replicas, found, err := intField(rj, 0, MaxPods, field+".replicas", "replicas")
		if err != nil {
			return Workload{}, err
		}
		if !found {
			replicas = 1
		}
		perJob, err := jobPods(mapField(rj, "template"), field+".template")
		if err != nil {
			return Workload{}, err
		}
		if replicas*perJob > MaxPods {
			return Workload{}, invalidField("the total replica count", replicas*perJob, fmt.Sprintf("must be at most %d pods", MaxPods))
		}
		var job batchv1.JobTemplateSpec
		if err := toTyped(mapField(rj, "template"), &job, field+".template"); err != nil {
			return Workload{}, err
		}
		name, _ := rj["name"].(string)
		if name == "" {
			name = fmt.Sprintf("job%d", i)
		}
		if exclusive == "" {
			exclusive = job.Annotations[AnnotationJobSetExclusiveTopology]
		}
		sets = append(sets, podSet{
			Name:     name,
			Replicas: replicas * perJob,
			Pointer:  fmt.Sprintf("/spec/replicatedJobs/%d/template/spec/template", i),
			Field:    field + ".template.spec.template",
			Template: job.Spec.Template,
		})
	}
	if err := fromPodSets(&w, sets); err != nil {
		return Workload{}, err
	}
	w.Topology.RequiredNodeLabel = exclusive
	return w, nil
}

// jobPods is the number of pods a batch/v1 Job template runs at once:
// min(parallelism (default 1), completions when set).
func jobPods(tmpl map[string]any, field string) (int, error) {
	parallelism, found, err := intField(tmpl, 0, MaxPods, field+".spec.parallelism", "spec", "parallelism")
	if err != nil {
		return 0, err
	}
	if !found {
		parallelism = 1
	}
	completions, found, err := intField(tmpl, 0, MaxPods, field+".spec.completions", "spec", "completions")
	if err != nil {
		return 0, err
	}
	if found {
		parallelism = min(parallelism, completions)
	}
	return parallelism, nil
}
