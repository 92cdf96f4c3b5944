package topology

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CountedPod is what the cluster model and the quota ledger read of a pod:
// its identity, the labels and annotations they read (preemptibility, the
// KAI share, the gang owner, the reservation), its controller, node,
// priority class and phase, the GPU product it pins, its GPUs as the
// scheduler counts them and the names of the DRA claims it holds. The
// informers keep pods as such facts (cluster.PodFacts) and count them
// without a Pod built back from them; a whole Pod is read through
// CountedOf. Its maps and slices are only read.
type CountedPod struct {
	Namespace, Name     string
	Labels, Annotations map[string]string
	// Controller is the pod's controller reference; nil without.
	Controller    *metav1.OwnerReference
	Node          string
	PriorityClass string
	Phase         corev1.PodPhase
	// Product is the GPU product the pod pins (workload.PodProduct); ""
	// for none.
	Product string
	// GPUs are the pod's extended-resource GPUs (PodGPURequests).
	GPUs map[string]int
	// Claims are the names of the DRA claims it holds (PodClaimNames);
	// Templates the ResourceClaimTemplates of its claims not made yet
	// (PodPendingTemplates).
	Claims    []string
	Templates []string
}

// CountedOf is what the model and the ledger count of pod, with product
// the GPU product it pins. pod is not changed; the result shares its maps.
func CountedOf(pod *corev1.Pod, product string) CountedPod {
	return CountedPod{
		Namespace: pod.Namespace, Name: pod.Name,
		Labels: pod.Labels, Annotations: pod.Annotations,
		Controller:    metav1.GetControllerOfNoCopy(pod),
		Node:          pod.Spec.NodeName,
		PriorityClass: pod.Spec.PriorityClassName,
		Phase:         pod.Status.Phase,
		Product:       product,
		GPUs:          podGPURequests(pod),
		Claims:        PodClaimNames(pod),
		Templates:     PodPendingTemplates(pod),
	}
}

// Terminal says whether the pod has finished (Succeeded or Failed): it
// takes no GPUs on its node.
func (p *CountedPod) Terminal() bool {
	return p.Phase == corev1.PodSucceeded || p.Phase == corev1.PodFailed
}

// Holdings is PodUsage of the pod without its claims' devices: its
// GPUs and its KAI share (a gpu-memory share mapped with the device
// memory of product). It keeps its older name while the quota ledger,
// which calls it, is being rewritten; it is usage, not a hold.
func (p *CountedPod) Holdings(product string, c Counting) Usage {
	return podUsage(p.GPUs, p.Annotations, product, c)
}
