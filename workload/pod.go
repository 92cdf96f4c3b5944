package workload

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PodGVK is v1 Pod: a bare pod is a gang of one.
var PodGVK = corev1.SchemeGroupVersion.WithKind("Pod")

func init() {
	Register(Kind{GVK: PodGVK, Resource: "pods", Label: "Pod", Normalise: normalisePod,
		Finished: Finished{PhasePath: []string{"status", "phase"}, Phases: []string{"Succeeded", "Failed"}}})
}

// normalisePod: a bare pod is a gang of one with the single role "main",
// interactive unless labelled otherwise. Its controlling owner, if any, is
// recorded so the webhook can recognise pods of an already admitted gang.
func normalisePod(obj *unstructured.Unstructured) (Workload, error) {
	var pod corev1.Pod
	if err := toTyped(obj.Object, &pod, "Pod"); err != nil {
		return Workload{}, err
	}
	w := Workload{Class: ClassInteractive}
	err := fromPodSets(&w, []podSet{{
		Name:     "main",
		Replicas: 1,
		Pointer:  "",
		Field:    "",
		Template: corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec},
	}})
	if err != nil {
		return Workload{}, err
	}
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			w.Owner = &Owner{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: string(ref.UID)}
			break
		}
	}
	return w, nil
}
