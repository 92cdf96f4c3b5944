package topologytest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodOption changes a pod GPUPod builds.
type PodOption func(*corev1.Pod)

// GPUPod is a pod in namespace with one container "c" limited to gpus
// nvidia.com/gpu, changed by opts: the GPU pod every test of the cluster
// model, the ledger and the load suite starts from.
func GPUPod(namespace, name string, gpus int64, opts ...PodOption) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/x:1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}},
		}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// OnNode binds the pod to node.
func OnNode(node string) PodOption { return func(p *corev1.Pod) { p.Spec.NodeName = node } }

// InPhase sets the pod's phase.
func InPhase(phase corev1.PodPhase) PodOption { return func(p *corev1.Pod) { p.Status.Phase = phase } }

// WithPriorityClass sets the pod's priority class.
func WithPriorityClass(class string) PodOption {
	return func(p *corev1.Pod) { p.Spec.PriorityClassName = class }
}

// WithLabels sets the pod's labels.
func WithLabels(labels map[string]string) PodOption {
	return func(p *corev1.Pod) { p.Labels = labels }
}
