package workload

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// LeaderWorkerSetGVK is the Kubernetes LeaderWorkerSet (sigs.k8s.io/lws v0.7).
var LeaderWorkerSetGVK = schema.GroupVersionKind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"}

func init() {
	Register(Kind{GVK: LeaderWorkerSetGVK, Resource: "leaderworkersets", Label: "LeaderWorkerSet", GangOwner: true, Normalise: normaliseLeaderWorkerSet,
		Shape: Shape{Fields: []string{"leaderWorkerTemplate", "size", "leaderTemplate", "workerTemplate"}}})
}

// normaliseLeaderWorkerSet: spec.replicas groups (default 1) of
// spec.leaderWorkerTemplate.size pods (default 1): a "leader" role of one
// pod per group (leaderTemplate, else workerTemplate, as LWS does) and a
// "worker" role of size-1 pods per group. All replicas × size pods count
// against quota; each group is a gang of its own, so the gang minimum
// (MinPods) is the group size. The class is inference, LWS's use.
func normaliseLeaderWorkerSet(obj *unstructured.Unstructured) (Workload, error) {
	groups, found, err := intField(obj.Object, 0, MaxPods, "spec.replicas", "spec", "replicas")
	if err != nil {
		return Workload{}, err
	}
	if !found {
		groups = 1
	}
	size, found, err := intField(obj.Object, 1, MaxPods, "spec.leaderWorkerTemplate.size", "spec", "leaderWorkerTemplate", "size")
	if err != nil {
		return Workload{}, err
	}
	if !found {
		size = 1
	}
	if groups*size > MaxPods {
		return Workload{}, invalidField("the total replica count", groups*size, fmt.Sprintf("must be at most %d pods", MaxPods))
	}
	var lws struct {
		Spec struct {
			LeaderWorkerTemplate struct {
				LeaderTemplate *corev1.PodTemplateSpec `json:"leaderTemplate,omitempty"`
				WorkerTemplate corev1.PodTemplateSpec  `json:"workerTemplate"`
			} `json:"leaderWorkerTemplate"`
		} `json:"spec"`
	}
	if err := toTyped(obj.Object, &lws, "LeaderWorkerSet"); err != nil {
		return Workload{}, err
	}
	lwt := lws.Spec.LeaderWorkerTemplate
	leader := podSet{
		Name:     "leader",
		Replicas: groups,
		Pointer:  "/spec/leaderWorkerTemplate/workerTemplate",
		Field:    "spec.leaderWorkerTemplate.workerTemplate",
		Template: lwt.WorkerTemplate,
	}
	if lwt.LeaderTemplate != nil {
		leader.Pointer, leader.Field = "/spec/leaderWorkerTemplate/leaderTemplate", "spec.leaderWorkerTemplate.leaderTemplate"
		leader.Template = *lwt.LeaderTemplate
	}
	w := Workload{Class: ClassInference}
	err = fromPodSets(&w, []podSet{leader, {
		Name:     "worker",
		Replicas: groups * (size - 1),
		Pointer:  "/spec/leaderWorkerTemplate/workerTemplate",
		Field:    "spec.leaderWorkerTemplate.workerTemplate",
		Template: lwt.WorkerTemplate,
	}})
	if err != nil {
		return Workload{}, err
	}
	if size < w.Pods {
		w.MinPods = size
	}
	return w, nil
}
