package workload

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// PyTorchJobGVK is the Kubeflow training-operator PyTorchJob.
var PyTorchJobGVK = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"}

func init() {
	Register(Kind{GVK: PyTorchJobGVK, Resource: "pytorchjobs", Label: "PyTorchJob", GangOwner: true, Normalise: normalisePyTorchJob, Suspend: []string{"spec", "runPolicy", "suspend"},
		Shape: Shape{Fields: []string{"elasticPolicy"}, RoleMaps: []string{"pytorchReplicaSpecs"}}, Finished: Finished{Conditions: []string{"Succeeded", "Failed"}}})
}

// pyTorchJob is the part of kubeflow.org/v1 PyTorchJob Mandate reads (no
// Kubeflow Go module is a dependency). Counts are read with intField, not
// from these types.
type pyTorchJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		PyTorchReplicaSpecs map[string]*struct {
			Template corev1.PodTemplateSpec `json:"template,omitempty"`
		} `json:"pytorchReplicaSpecs"`
	} `json:"spec"`
}

// normalisePyTorchJob: one role per replica spec (Master, Worker, …), sorted
// by name; each runs spec.pytorchReplicaSpecs[r].replicas pods (default 1).
// The elastic minimum is spec.elasticPolicy.minReplicas, else
// spec.runPolicy.schedulingPolicy.minAvailable (the operator's own gang
// minimum). The class is training.
func normalisePyTorchJob(obj *unstructured.Unstructured) (Workload, error) {
	// Counts first, from the raw object: the typed conversion would wrap
	// out-of-range integers silently.
	specs := mapField(obj.Object, "spec", "pytorchReplicaSpecs")
	names := make([]string, 0, len(specs))
	for name := range specs {
		names = append(names, name)
	}
	sort.Strings(names)
	replicas := make([]int, len(names))
	for i, name := range names {
		raw, _ := specs[name].(map[string]any)
		n, found, err := intField(raw, 0, MaxPods, fmt.Sprintf("spec.pytorchReplicaSpecs[%s].replicas", name), "replicas")
		if err != nil {
			return Workload{}, err
		}
		if !found {
			n = 1
		}
		replicas[i] = n
	}
	minPods, minField := 0, ""
	for _, f := range []struct{ field, path string }{
		{"spec.elasticPolicy.minReplicas", "spec/elasticPolicy/minReplicas"},
		{"spec.runPolicy.schedulingPolicy.minAvailable", "spec/runPolicy/schedulingPolicy/minAvailable"},
	} {
		n, found, err := intField(obj.Object, 1, MaxPods, f.field, strings.Split(f.path, "/")...)
		if err != nil {
			return Workload{}, err
		}
		if found {
			minPods, minField = n, f.field
			break
		}
	}

	var job pyTorchJob
	if err := toTyped(obj.Object, &job, "PyTorchJob"); err != nil {
		return Workload{}, err
	}
	if len(names) == 0 || len(job.Spec.PyTorchReplicaSpecs) == 0 {
		return Workload{}, missingField("spec.pytorchReplicaSpecs", "a PyTorchJob has at least one replica spec (Master, Worker)")
	}
	sets := make([]podSet, 0, len(names))
	for i, name := range names {
		rs := job.Spec.PyTorchReplicaSpecs[name]
		field := fmt.Sprintf("spec.pytorchReplicaSpecs[%s]", name)
		if rs == nil {
			return Workload{}, missingField(field, "a replica spec has a pod template")
		}
		sets = append(sets, podSet{
			Name:     name,
			Replicas: replicas[i],
			Pointer:  "/spec/pytorchReplicaSpecs/" + escapePointer(name) + "/template",
			Field:    field + ".template",
			Template: rs.Template,
		})
	}
	w := Workload{Class: ClassTraining}
	if err := fromPodSets(&w, sets); err != nil {
		return Workload{}, err
	}
	if minPods > w.Pods {
		return Workload{}, invalidField(minField, minPods,
			fmt.Sprintf("must be a whole number from 1 to the %d replicas of all replica specs", w.Pods))
	}
	w.MinPods = minPods
	return w, nil
}

// escapePointer escapes one JSON pointer reference token (RFC 6901).
func escapePointer(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}
