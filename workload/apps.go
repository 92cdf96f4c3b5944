package workload

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DeploymentGVK and StatefulSetGVK are apps/v1's replicated servers.
var (
	DeploymentGVK  = appsv1.SchemeGroupVersion.WithKind("Deployment")
	StatefulSetGVK = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	// ReplicaSetGVK is not governed: a Deployment's ReplicaSets are the
	// link between its pods and it (review.Service.GangDirectives).
	ReplicaSetGVK = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
)

func init() {
	Register(Kind{GVK: DeploymentGVK, Resource: "deployments", Label: "Deployment", GangOwner: true, Scalable: true, Normalise: normaliseReplicated})
	Register(Kind{GVK: StatefulSetGVK, Resource: "statefulsets", Label: "StatefulSet", GangOwner: true, Scalable: true, Normalise: normaliseReplicated})
}

// normaliseReplicated: a Deployment or StatefulSet runs spec.replicas pods
// (default 1; 0 counts as 1) of spec.template, one role "main". Every replica counts
// against quota, but each is a gang of one (MinPods 1): replicas start,
// and are placed, independently. Scaling up is an UPDATE that raises the
// total GPUs, decided as any UPDATE that does. The class is inference.
func normaliseReplicated(obj *unstructured.Unstructured) (Workload, error) {
	replicas, found, err := intField(obj.Object, 0, MaxPods, "spec.replicas", "spec", "replicas")
	if err != nil {
		return Workload{}, err
	}
	if !found || replicas == 0 {
		// Scaled to zero, it is decided on what one replica asks for (a
		// Workload runs at least one pod): its reservation lapses
		// unconfirmed, since no pod consumes it, and an UPDATE to zero
		// raises nothing.
		replicas = 1
	}
	var spec struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := toTyped(obj.Object, &spec, obj.GetKind()); err != nil {
		return Workload{}, err
	}
	w := Workload{Class: ClassInference}
	if err := fromPodSets(&w, []podSet{{
		Name:     "main",
		Replicas: replicas,
		Pointer:  "/spec/template",
		Field:    "spec.template",
		Template: spec.Spec.Template,
	}}); err != nil {
		return Workload{}, err
	}
	if w.Pods > 1 {
		w.MinPods = 1
	}
	return w, nil
}
