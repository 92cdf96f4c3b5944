package cluster

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// What the decisions read of the Pods and Nodes the informers hold (cluster,
// ledger, topology; audit, clusterreport, explain and authoritymetrics read
// their own listings, never the informers; review reads owners, never pods,
// from the cache):
//
//	Pod  metadata: name, namespace, labels (mandate.dev/preemptible,
//	           kai.scheduler/preemptibility), annotations (volcano.sh/preemptable,
//	           mandate.dev/gang-owner, mandate.dev/reservation, KAI's gpu-fraction,
//	           gpu-fraction-num-devices, gpu-memory), the controller reference
//	     spec: nodeName, priorityClassName, nodeSelector and required node
//	           affinity (the GPU product), containers' and init containers'
//	           GPU requests and limits, init containers' restartPolicy
//	           (sidecars), resourceClaims (the names of the DRA claims held,
//	           the templates of those not made yet)
//	   status: phase, resourceClaimStatuses (the names of the claims made
//	           from templates), when a scheduler's preemption marked it
//	           (the DisruptionTarget condition; the gang-whole controller,
//	           package gangpreempt)
//	Node metadata: name, labels (the topology levels, the product, the
//	           health label: configured by the model, so all are kept)
//	     spec: unschedulable, taints
//	   status: allocatable GPUs, conditions (type and status: readiness
//	           and the model's unhealthy conditions)
//
// A pod's labels and annotations are kept when they are Mandate's own
// (mandate.dev/) or schedulers' and device sharing's keys (PodKeyKept):
// the keys a Job controller or an operator adds (job names, controller
// UIDs, completion indexes, last-applied configurations) are most of a
// stripped pod otherwise. Containers without GPUs count nothing and are
// dropped; so are every other field, and managedFields always. A pod is
// stored as PodFacts, its GPUs already counted.

// StripTransforms are the manager cache's transforms that keep of Pods and
// Nodes only what the decisions read: PodFacts for a Pod (CompactPod), a
// stripped Node (StripNode).
func StripTransforms() map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}:  {Transform: transform(CompactPod)},
		&corev1.Node{}: {Transform: transform(StripNode)},
	}
}

// transform applies strip to objects of its type. Any other object of the
// same kind (the metadata-only copy another controller watches: the gang
// controller's PartialObjectMetadata of every Pod) loses its managedFields,
// which nothing reads and which are most of a pod's metadata (at 150k
// pods, ~600 MiB); anything else (a tombstone) passes through untouched.
func transform[T, S any](strip func(*T) *S) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		if o, ok := obj.(*T); ok {
			return strip(o), nil
		}
		return stripManagedFields(obj)
	}
}

// stripManagedFields drops an object's managedFields (the informers of
// every other kind: StripTransforms' default).
var stripManagedFields = cache.TransformStripManagedFields()

// strippedMeta keeps of an object's metadata what an informer and the
// decisions need: identity, version, the given labels, annotations and
// owners; never managedFields.
func strippedMeta(m *metav1.ObjectMeta, labels, annotations map[string]string, owners []metav1.OwnerReference) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		DeletionTimestamp: m.DeletionTimestamp,
		Labels:            labels,
		Annotations:       annotations,
		OwnerReferences:   owners,
	}
}

// keptKeyPrefixes and keptKeys are the pod labels and annotations the
// informers keep (PodKeyKept).
var (
	keptKeyPrefixes = append([]string{workload.KeyPrefix, "scheduling.x-k8s.io/", "gpu-"}, schedulerKeyPrefixes()...)
	keptKeys        = map[string]bool{"runai/queue": true}
)

// schedulerKeyPrefixes are the registered schedulers' pod key prefixes
// (facts.Scheduler.PodKeyPrefixes).
func schedulerKeyPrefixes() []string {
	var out []string
	for _, s := range facts.All() {
		out = append(out, s.PodKeyPrefixes...)
	}
	return out
}

// PodKeyKept says whether the informers keep a pod's label or annotation
// key: Mandate's own, the schedulers' (KAI, Volcano, Kueue, the scheduler
// plugins' pod groups) and KAI's GPU-sharing keys (gpu-fraction, gpu-memory,
// gpu-fraction-num-devices).
func PodKeyKept(key string) bool {
	if keptKeys[key] {
		return true
	}
	for _, p := range keptKeyPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// keptKeysOf is m's entries whose keys the informers keep; nil for none.
func keptKeysOf(m map[string]string) map[string]string {
	var out map[string]string
	for k, v := range m {
		if PodKeyKept(k) {
			if out == nil {
				out = make(map[string]string, 2)
			}
			out[k] = v
		}
	}
	return out
}

// PodFacts is what the informers store of a Pod: its identity, the labels
// and annotations kept (PodKeyKept), its controller reference, node,
// priority class and phase, the GPU product it pins and its GPUs as the
// scheduler counts them (topology.PodGPURequests). A *corev1.Pod holds a
// kilobyte of empty fields alone; PodFacts a fraction of that. The Pod
// informer of a cache with StripTransforms holds PodFacts, so Pods are
// never read through that cache's client (State.Watch reads the events).
type PodFacts struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	NodeName          string
	PriorityClassName string
	Phase             corev1.PodPhase
	// Product is the GPU product the pod pins (workload.PodProduct).
	Product string
	// GPUs are the pod's GPUs by resource, sorted by resource.
	GPUs []ResourceCount
	// Claims are the names of the DRA ResourceClaims the pod holds
	// (topology.PodClaimNames), whose devices count as its GPUs.
	Claims []string `json:",omitempty"`
	// Templates are the ResourceClaimTemplates of its claims not made yet
	// (topology.PodPendingTemplates), whose requests count as its GPUs
	// until they are.
	Templates []string `json:",omitempty"`
	// PreemptedAt is when a scheduler marked the pod as its preemption's
	// victim (PreemptedAt); nil when none did.
	PreemptedAt *metav1.Time `json:",omitempty"`
}

// ResourceCount is a count of one resource.
type ResourceCount struct {
	Resource string
	Count    int
}

// CompactPod is what the informers keep of p (PodFacts). p is not changed.
func CompactPod(p *corev1.Pod) *PodFacts {
	f := &PodFacts{
		TypeMeta:          p.TypeMeta,
		ObjectMeta:        strippedMeta(&p.ObjectMeta, keptKeysOf(p.Labels), keptKeysOf(p.Annotations), controllerOf(p.OwnerReferences)),
		NodeName:          p.Spec.NodeName,
		PriorityClassName: p.Spec.PriorityClassName,
		Phase:             p.Status.Phase,
		Product:           workload.PodProduct(&p.Spec),
		Claims:            topology.PodClaimNames(p),
		Templates:         topology.PodPendingTemplates(p),
		PreemptedAt:       PreemptedAt(p),
	}
	for res, n := range topology.PodGPURequests(p) {
		f.GPUs = append(f.GPUs, ResourceCount{Resource: res, Count: n})
	}
	slices.SortFunc(f.GPUs, func(a, b ResourceCount) int { return strings.Compare(a.Resource, b.Resource) })
	return f
}

// PreemptedAt is when a scheduler marked p as a victim of its
// preemption: the time of a True DisruptionTarget condition with reason
// PreemptionByScheduler (kube-scheduler writes it before it deletes the
// pod); nil when there is none.
func PreemptedAt(p *corev1.Pod) *metav1.Time {
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonPreemptionByScheduler {
			t := c.LastTransitionTime
			return &t
		}
	}
	return nil
}

// Pod is the pod the decisions see: the facts, with the GPUs as the
// limits of one container and the product as a node selector.
func (f *PodFacts) Pod() *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: f.ObjectMeta,
		Spec:   corev1.PodSpec{NodeName: f.NodeName, PriorityClassName: f.PriorityClassName},
		Status: corev1.PodStatus{Phase: f.Phase}}
	p.Kind, p.APIVersion = "Pod", "v1"
	if f.Product != "" {
		p.Spec.NodeSelector = map[string]string{topology.DefaultProductLabel: f.Product}
	}
	if len(f.GPUs) > 0 {
		limits := make(corev1.ResourceList, len(f.GPUs))
		for _, g := range f.GPUs {
			limits[corev1.ResourceName(g.Resource)] = *resource.NewQuantity(int64(g.Count), resource.DecimalSI)
		}
		p.Spec.Containers = []corev1.Container{{Name: "gpus", Resources: corev1.ResourceRequirements{Limits: limits}}}
	}
	for _, name := range f.Claims {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: name, ResourceClaimName: &name})
	}
	for i, tpl := range f.Templates {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: fmt.Sprintf("pending-%d", i), ResourceClaimTemplateName: &tpl})
	}
	return p
}

// DeepCopyObject implements runtime.Object.
func (f *PodFacts) DeepCopyObject() runtime.Object {
	out := *f
	f.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.GPUs = slices.Clone(f.GPUs)
	out.Claims = slices.Clone(f.Claims)
	out.Templates = slices.Clone(f.Templates)
	if f.PreemptedAt != nil {
		out.PreemptedAt = f.PreemptedAt.DeepCopy()
	}
	return &out
}

// Counted is what the cluster model and the ledger count of the pod
// (State.UpsertFacts), read from the facts as they are: no Pod is built.
// It shares f's maps and slices, which are only read.
func (f *PodFacts) Counted() topology.CountedPod {
	var gpus map[string]int
	if len(f.GPUs) > 0 {
		gpus = make(map[string]int, len(f.GPUs))
		for _, g := range f.GPUs {
			gpus[g.Resource] = g.Count
		}
	}
	return topology.CountedPod{
		Namespace: f.Namespace, Name: f.Name,
		Labels: f.Labels, Annotations: f.Annotations,
		Controller:    metav1.GetControllerOfNoCopy(&f.ObjectMeta),
		Node:          f.NodeName,
		PriorityClass: f.PriorityClassName,
		Phase:         f.Phase,
		Product:       f.Product,
		GPUs:          gpus,
		Claims:        f.Claims,
		Templates:     f.Templates,
	}
}

// StripPod is the pod the decisions see of p once the informers have
// stored it: CompactPod(p).Pod(). p is not changed.
func StripPod(p *corev1.Pod) *corev1.Pod { return CompactPod(p).Pod() }

// controllerOf is the controller reference among refs, alone; nil without.
func controllerOf(refs []metav1.OwnerReference) []metav1.OwnerReference {
	for i := range refs {
		if refs[i].Controller != nil && *refs[i].Controller {
			return []metav1.OwnerReference{refs[i]}
		}
	}
	return nil
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
		ObjectMeta: strippedMeta(&n.ObjectMeta, n.Labels, nil, nil),
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
