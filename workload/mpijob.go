package workload

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// MPIJobGVK is the Kubeflow MPI operator's MPIJob (github.com/kubeflow/mpi-operator v0.6).
var MPIJobGVK = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v2beta1", Kind: "MPIJob"}

func init() {
	Register(Kind{GVK: MPIJobGVK, Resource: "mpijobs", Label: "MPIJob", GangOwner: true, Normalise: normaliseMPIJob, Suspend: []string{"spec", "runPolicy", "suspend"},
		Shape: Shape{RoleMaps: []string{"mpiReplicaSpecs"}}, Finished: Finished{Conditions: []string{"Succeeded", "Failed"}}})
}

// mpiRoles are the replica specs of an MPIJob, launcher first.
var mpiRoles = []string{"Launcher", "Worker"}

// normaliseMPIJob: a "Launcher" role (replicas, default 1) and a "Worker"
// role (replicas, default 0), all started together; the elastic minimum is
// spec.runPolicy.schedulingPolicy.minAvailable. The class is training.
func normaliseMPIJob(obj *unstructured.Unstructured) (Workload, error) {
	specs := mapField(obj.Object, "spec", "mpiReplicaSpecs")
	if len(specs) == 0 {
		return Workload{}, missingField("spec.mpiReplicaSpecs", "an MPIJob has a Launcher and Workers")
	}
	var sets []podSet
	for _, role := range mpiRoles {
		raw, ok := specs[role]
		if !ok || raw == nil {
			continue
		}
		rs, ok := raw.(map[string]any)
		field := fmt.Sprintf("spec.mpiReplicaSpecs[%s]", role)
		if !ok {
			return Workload{}, invalidf("%s is %s: must be an object", field, jsonType(raw))
		}
		n, found, err := intField(rs, 0, MaxPods, field+".replicas", "replicas")
		if err != nil {
			return Workload{}, err
		}
		if !found && role == "Launcher" {
			n = 1
		}
		var tmpl corev1.PodTemplateSpec
		if err := toTyped(mapField(rs, "template"), &tmpl, field+".template"); err != nil {
			return Workload{}, err
		}
		sets = append(sets, podSet{
			Name:     role,
			Replicas: n,
			Pointer:  "/spec/mpiReplicaSpecs/" + role + "/template",
			Field:    field + ".template",
			Template: tmpl,
		})
	}
	if len(sets) == 0 {
		return Workload{}, missingField("spec.mpiReplicaSpecs.Launcher", "an MPIJob has a Launcher")
	}
	minPods, _, err := intField(obj.Object, 1, MaxPods, "spec.runPolicy.schedulingPolicy.minAvailable",
		"spec", "runPolicy", "schedulingPolicy", "minAvailable")
	if err != nil {
		return Workload{}, err
	}
	w := Workload{Class: ClassTraining}
	if err := fromPodSets(&w, sets); err != nil {
		return Workload{}, err
	}
	if minPods > w.Pods {
		return Workload{}, invalidField("spec.runPolicy.schedulingPolicy.minAvailable", minPods,
			fmt.Sprintf("must be a whole number from 1 to the %d replicas of the Launcher and Workers", w.Pods))
	}
	w.MinPods = minPods
	return w, nil
}
