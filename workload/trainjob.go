package workload

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mandate-dev/mandate/topology"
)

// TrainJobGVK is the Kubeflow Trainer v2 TrainJob (github.com/kubeflow/trainer/v2 v2.0).
var TrainJobGVK = schema.GroupVersionKind{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "TrainJob"}

func init() {
	Register(Kind{GVK: TrainJobGVK, Resource: "trainjobs", Label: "TrainJob", GangOwner: true, Normalise: normaliseTrainJob, Suspend: []string{"spec", "suspend"},
		Shape: Shape{Fields: []string{"runtimeRef", "trainer", "numNodes", "resourcesPerNode"}}, Finished: Finished{Conditions: []string{"Complete", "Failed"}}})
}

// normaliseTrainJob: one role, "node", of spec.trainer.numNodes pods, each
// asking for spec.trainer.resourcesPerNode. A TrainJob carries no pod
// template: its runtime (a ClusterTrainingRuntime or TrainingRuntime, a
// separate object the normaliser does not read) does, and fills what the
// TrainJob leaves unset. So an unset numNodes counts 1 node (the
// runtime's mlPolicy.numNodes may say more) and unset resourcesPerNode
// counts no GPUs: the JobSet the trainer controller then creates, whose
// pods do ask for GPUs, is decided on its own (its GPUs are not the
// TrainJob's). The role's template pointer is NoTemplate: the directives
// reach the pods through that child JobSet, which gets the TrainJob's.
// A pod-spec override of the "node" job pinning nvidia.com/gpu.product
// names the product. The class is training.
func normaliseTrainJob(obj *unstructured.Unstructured) (Workload, error) {
	nodes, found, err := intField(obj.Object, 1, MaxPods, "spec.trainer.numNodes", "spec", "trainer", "numNodes")
	if err != nil {
		return Workload{}, err
	}
	if !found {
		nodes = 1
	}
	var spec struct {
		Spec struct {
			RuntimeRef struct {
				Name string `json:"name"`
			} `json:"runtimeRef"`
			Trainer *struct {
				ResourcesPerNode *corev1.ResourceRequirements `json:"resourcesPerNode,omitempty"`
			} `json:"trainer,omitempty"`
			PodSpecOverrides []struct {
				TargetJobs []struct {
					Name string `json:"name"`
				} `json:"targetJobs"`
				NodeSelector map[string]string `json:"nodeSelector,omitempty"`
			} `json:"podSpecOverrides,omitempty"`
		} `json:"spec"`
	}
	if err := toTyped(obj.Object, &spec, "TrainJob"); err != nil {
		return Workload{}, err
	}
	if spec.Spec.RuntimeRef.Name == "" {
		return Workload{}, missingField("spec.runtimeRef.name", "a TrainJob names its training runtime")
	}
	node := corev1.Container{Name: "node"}
	if t := spec.Spec.Trainer; t != nil && t.ResourcesPerNode != nil {
		node.Resources = *t.ResourcesPerNode
	}
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{node}}}
	for _, o := range spec.Spec.PodSpecOverrides {
		for _, j := range o.TargetJobs {
			if j.Name == "node" && o.NodeSelector[topology.DefaultProductLabel] != "" {
				tmpl.Spec.NodeSelector = map[string]string{topology.DefaultProductLabel: o.NodeSelector[topology.DefaultProductLabel]}
			}
		}
	}
	w := Workload{Class: ClassTraining}
	if !found {
		w.Notes = append(w.Notes, fmt.Sprintf("spec.trainer.numNodes is unset: counted as 1 node; the nodes runtime %q adds "+
			"(its mlPolicy.numNodes, not read at admission) are decided one by one as its pods are created", spec.Spec.RuntimeRef.Name))
	}
	if t := spec.Spec.Trainer; t == nil || t.ResourcesPerNode == nil {
		w.Notes = append(w.Notes, fmt.Sprintf("spec.trainer.resourcesPerNode is unset: no GPUs are counted with the TrainJob; "+
			"the JobSet runtime %q creates for it is decided with the runtime's GPUs", spec.Spec.RuntimeRef.Name))
	}
	err = fromPodSets(&w, []podSet{{
		Name:     "node",
		Replicas: nodes,
		Pointer:  NoTemplate,
		Field:    "spec.trainer.resourcesPerNode",
		Template: tmpl,
	}})
	return w, err
}
