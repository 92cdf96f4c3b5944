package cluster

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/topology"
)

// What the decisions read of the Pods and Nodes the informers hold (cluster,
// ledger, topology; audit, clusterreport, explain and authoritymetrics read
// their own listings, never the informers; review reads owners, never pods,
// from the cache):
//
//	Pod  metadata: name, namespace, uid, labels (mandate.dev/preemptible,
//	           kai.scheduler/preemptibility), annotations (volcano.sh/preemptable,
//	           mandate.dev/gang-owner, mandate.dev/reservation, KAI's gpu-fraction,
//	           gpu-fraction-num-devices, gpu-memory), ownerReferences (the controller)
//	     spec: nodeName, priorityClassName, nodeSelector and required node
//	           affinity (the GPU product), containers' and init containers'
//	           GPU requests and limits, init containers' restartPolicy
//	           (sidecars), resource claims
//	   status: phase
//	Node metadata: name, labels (the topology levels, the product, the
//	           health label: configured, so all are kept); no annotations
//	     spec: unschedulable, taints
//	   status: allocatable GPUs, conditions (type and status: readiness
//	           and the model's unhealthy conditions)
//
// Pods' labels and annotations and nodes' labels are an open set (the model
// names its level and health labels; schedulers' keys change), so they are
// kept whole: they
// are a small part of a pod next to its containers, volumes, status and
// managed fields. Everything else is dropped before the object is stored,
// so the informers hold about a tenth of each pod.

// StripTransforms are the manager cache's transforms that keep of Pods and
// Nodes only what the decisions read (StripPod, StripNode).
func StripTransforms() map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}:  {Transform: transform(StripPod)},
		&corev1.Node{}: {Transform: transform(StripNode)},
	}
}

// transform applies strip to objects of its type and passes anything else
// (a tombstone, another type) through untouched.
func transform[T any](strip func(*T) *T) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		if o, ok := obj.(*T); ok {
			return strip(o), nil
		}
		return obj, nil
	}
}

// strippedMeta keeps of an object's metadata what an informer and the
// decisions need: identity, version, labels, the given annotations and
// owners; never managedFields.
func strippedMeta(m *metav1.ObjectMeta, annotations map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		Generation:        m.Generation,
		CreationTimestamp: m.CreationTimestamp,
		DeletionTimestamp: m.DeletionTimestamp,
		Labels:            m.Labels,
		Annotations:       annotations,
		OwnerReferences:   m.OwnerReferences,
	}
}

// StripPod returns a new Pod holding only what the decisions read of p
// (see above). p is not changed.
func StripPod(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{
		TypeMeta:   p.TypeMeta,
		ObjectMeta: strippedMeta(&p.ObjectMeta, p.Annotations),
		Spec: corev1.PodSpec{
			NodeName:          p.Spec.NodeName,
			SchedulerName:     p.Spec.SchedulerName,
			PriorityClassName: p.Spec.PriorityClassName,
			NodeSelector:      p.Spec.NodeSelector,
			ResourceClaims:    p.Spec.ResourceClaims,
			Containers:        stripContainers(p.Spec.Containers),
			InitContainers:    stripContainers(p.Spec.InitContainers),
		},
		Status: corev1.PodStatus{Phase: p.Status.Phase, ResourceClaimStatuses: p.Status.ResourceClaimStatuses},
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		out.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution}}
	}
	return out
}

// stripContainers keeps each container's name, restart policy (a sidecar's
// "Always"), GPU requests and limits and resource claims.
func stripContainers(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i := range cs {
		c := &cs[i]
		out[i] = corev1.Container{Name: c.Name, RestartPolicy: c.RestartPolicy, Resources: corev1.ResourceRequirements{
			Requests: gpuResources(c.Resources.Requests), Limits: gpuResources(c.Resources.Limits), Claims: c.Resources.Claims}}
	}
	return out
}

// gpuResources is the GPU part of a resource list; nil without any.
func gpuResources(l corev1.ResourceList) corev1.ResourceList {
	var out corev1.ResourceList
	for name, q := range l {
		if topology.IsGPUResource(string(name)) {
			if out == nil {
				out = make(corev1.ResourceList, 1)
			}
			out[name] = q
		}
	}
	return out
}

// StripNode returns a new Node holding only what the decisions read of n
// (see above). n is not changed.
func StripNode(n *corev1.Node) *corev1.Node {
	out := &corev1.Node{
		TypeMeta:   n.TypeMeta,
		ObjectMeta: strippedMeta(&n.ObjectMeta, nil),
		Spec:       corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable, Taints: n.Spec.Taints},
		Status: corev1.NodeStatus{
			Capacity:    gpuResources(n.Status.Capacity),
			Allocatable: gpuResources(n.Status.Allocatable),
		},
	}
	if n.Status.Conditions != nil {
		out.Status.Conditions = make([]corev1.NodeCondition, len(n.Status.Conditions))
		for i, c := range n.Status.Conditions {
			out.Status.Conditions[i] = corev1.NodeCondition{Type: c.Type, Status: c.Status}
		}
	}
	return out
}
