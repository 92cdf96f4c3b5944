// Package workload owns the governed kinds and their scheduler-neutral view.
// One registry (Kind, Register) declares each kind once: its GVK, API
// resource, metric label, whether its pods form a gang decided with it, and
// its Normaliser, which turns an object of the kind (Pod, batch/v1 Job,
// Kubeflow PyTorchJob, Volcano Job, …) into one Workload: the shape the
// authority model reasons about, whatever the kind. Adding a kind is one
// Register call beside its Normaliser (see docs/architecture.md); the
// policies never change.
package workload

import (
	"github.com/mandate-dev/mandate/topology"
)

// Class is what a workload is for; the authority model maps classes to default
// priority classes.
type Class string

// The workload classes the default authority model knows.
const (
	ClassTraining    Class = "training"
	ClassInference   Class = "inference"
	ClassInteractive Class = "interactive"
	ClassBatch       Class = "batch"
)

// KeyPrefix starts every label and annotation key of Mandate itself: its
// marks (directives, preemptible, policy revision, seal) and the requests it
// decides on (class, topology, elastic minimum). Changing such a key after
// admission is refused (scheduler.ChangedOwnedKeys), and the informers keep
// them on the pods they cache.
const KeyPrefix = "mandate.dev/"

// Keys a workload may carry to ask for something; the authority model decides
// whether it gets it.
const (
	// LabelClass overrides the class inferred from the kind.
	LabelClass = "mandate.dev/class"
	// AnnotationTopologyRequired asks for all pods within one domain of a level.
	AnnotationTopologyRequired = "mandate.dev/topology-required"
	// AnnotationTopologyPreferred asks for a tighter level when it fits.
	AnnotationTopologyPreferred = "mandate.dev/topology-preferred"
	// AnnotationMinAvailable declares an elastic gang's minimum pod count.
	AnnotationMinAvailable = "mandate.dev/min-available"
	// LabelTenant on a Namespace names the tenant that owns it.
	LabelTenant = "mandate.dev/tenant"
	// AnnotationReservation, set by Mandate on an object admitted without a
	// name yet (generateName) and on its pod templates, names the quota
	// reservation its pods confirm: the name it will get is not known at
	// admission.
	AnnotationReservation = "mandate.dev/reservation"
	// AnnotationGangOwner, set by Mandate on a pod (or link object) whose
	// gang owner is not its direct controller (a Deployment's pod, whose
	// controller is a ReplicaSet; a JobSet's pod, whose controller is a
	// Job), names that owner as the JSON of an Owner: the quota ledger
	// counts the pod against the owner's reservation and gang slots.
	AnnotationGangOwner = "mandate.dev/gang-owner"
	// LabelPreemptible, set by Mandate on every pod template it governs
	// (scheduler.Render), tells the quota ledger whether the pods are
	// preemptible, whatever their priority class's tier.
	LabelPreemptible = "mandate.dev/preemptible"
	// LabelProduct is topology.DefaultProductLabel, the node label naming
	// the GPU model, under the name the ledger's tests still read; the
	// code uses topology.DefaultProductLabel.
	LabelProduct = topology.DefaultProductLabel
)

// KAI GPU-sharing annotations on a pod (template) that ask for part of a
// device instead of an extended resource.
const (
	// AnnotationGPUFraction asks for a fraction of one device, 0 < f < 1.
	AnnotationGPUFraction = "gpu-fraction"
	// AnnotationGPUMemory asks for a slice of one device by memory (MiB).
	AnnotationGPUMemory = "gpu-memory"
	// AnnotationGPUFractionDevices multiplies a fraction or memory request
	// over several devices.
	AnnotationGPUFractionDevices = "gpu-fraction-num-devices"
)

// NoTemplate is the Templates pointer of a role whose pod template is not
// in the object (a TrainJob's, which its runtime holds): adapters render
// nothing for it, and its pods get the directives through the child the
// kind's controller creates (a JobSet), which gets the owner's.
const NoTemplate = "-"

// Bounds beyond which a request is treated as a mistake rather than a
// workload (ErrInvalid).
const (
	// MaxPods is the largest gang (sum of all replicas) Mandate accepts.
	MaxPods = 100000
	// MaxGPUsPerPod is the largest GPU request of a single pod.
	MaxGPUsPerPod = 1024
)

// Workload is the normalised view of one gang workload: what input.workload
// holds in Rego. A bare pod is a gang of one.
type Workload struct {
	// Kind and APIVersion of the object as submitted.
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	// Name is metadata.name; empty when the object only has a generateName
	// (the API server names it after admission).
	Name         string `json:"name"`
	GenerateName string `json:"generateName,omitempty"`
	Namespace    string `json:"namespace"`
	// Tenant is filled from the namespace's mandate.dev/tenant label by the
	// caller, never from the workload itself; empty when the namespace has none.
	Tenant string `json:"tenant"`
	Class  Class  `json:"class"`
	// Pods is the gang size: all pods that must run together.
	Pods int `json:"pods"`
	// MinPods is the elastic minimum when the workload declares one, else 0.
	MinPods int `json:"minPods"`
	// GPUsPerPod is the largest GPU request of any pod in the gang (whole
	// devices or MIG slices of GPUResource); 0 for CPU-only workloads.
	GPUsPerPod int `json:"gpusPerPod"`
	// TotalGPUs is the exact sum over all pods (roles may differ) in whole
	// devices; for KAI fractional pods (GPUFraction) it is TotalMilliGPUs
	// rounded up to whole GPUs, the fraction counted against quota.
	TotalGPUs int `json:"totalGPUs"`
	// TotalMilliGPUs is the gang's exact GPU demand in thousandths of a
	// device: topology.MilliPerGPU per whole device, the fraction for KAI
	// gpu-fraction pods (16 pods at 0.25 make 4000).
	TotalMilliGPUs int64 `json:"totalMilliGPUs"`
	// GPUResource is the extended resource name, e.g. nvidia.com/gpu or
	// nvidia.com/mig-1g.10gb; empty for CPU-only workloads.
	GPUResource string `json:"gpuResource"`
	// GPUFraction is set when a pod asks for a fraction of a GPU (e.g. KAI's
	// gpu-fraction annotation); 0 otherwise.
	GPUFraction float64 `json:"gpuFraction,omitempty"`
	// GPUMemoryMiB is set when a pod asks for a slice of a GPU by memory
	// (KAI's gpu-memory annotation); 0 otherwise. Such a pod counts as
	// occupying one device per GPUsPerPod until MapGPUMemory maps its
	// memory to a share of a device.
	GPUMemoryMiB int64 `json:"gpuMemoryMiB,omitempty"`
	// GPUShareMilli is the thousandths of each of its devices a KAI-shared
	// pod takes: its gpu-fraction, or its gpu-memory over the device memory
	// the authority model gives (MapGPUMemory); 0 for whole devices,
	// which an unmapped gpu-memory pod takes. Pods that share devices are
	// placed packed onto them.
	GPUShareMilli int `json:"gpuShareMilli,omitempty"`
	// GPUProduct is the wanted GPU model from a node selector or required
	// node affinity on nvidia.com/gpu.product; empty when any will do.
	GPUProduct string `json:"gpuProduct"`
	// PriorityClass as requested by the pod template; empty when unset.
	PriorityClass string `json:"priorityClass"`
	// Topology the workload asks for (level names of the authority model).
	Topology TopologyRequest `json:"topology"`
	// RequestedPreemptible is set when the object's own labels or
	// annotations ask for a preemptibility through a scheduler's native
	// key (facts.PreemptibilityKeys): false asks to be non-preemptible, which
	// only the authority model may grant. RequestedPreemptibleBy names the
	// key=value that asks.
	RequestedPreemptible   *bool  `json:"requestedPreemptible,omitempty"`
	RequestedPreemptibleBy string `json:"requestedPreemptibleBy,omitempty"`
	// SchedulerKeys lists the schedulers' native keys the object sets
	// itself to ask for a queue, priority class or gang minimum, in a fixed
	// order; the authority model keeps or overrides each, and says so.
	SchedulerKeys []SchedulerKey `json:"schedulerKeys,omitempty"`
	// Scheduler is spec.schedulerName of the pod template, empty when unset.
	Scheduler string `json:"scheduler"`
	// Roles lists the pod groups of multi-role kinds (PyTorchJob Master and
	// Worker, Volcano tasks); a single role for Pods and Jobs.
	Roles []Role `json:"roles"`
	// Owner is the controlling owner of a Pod (kind/name), empty otherwise;
	// it lets the webhook recognise pods of an already admitted gang.
	Owner *Owner `json:"owner,omitempty"`
	// Templates are JSON pointers to the pod templates inside the object
	// ("/spec/template", "/spec/tasks/0/template"), one per role in the
	// order of Roles; "" means the object is itself a Pod. Scheduler
	// adapters patch these.
	Templates []string `json:"-"`
	// Claims lists the DRA ResourceClaims the pod templates reference, one
	// entry per reference, in role order. Resolving them into GPU demand
	// needs the claims and templates themselves (separate objects): the
	// review service does it (review.Service.Claims).
	Claims []PodClaim `json:"-"`
	// Notes are what the normaliser could not read and assumed instead (a
	// TrainJob's node count, which its runtime may set): warnings of the
	// decision, not part of the policy's input.
	Notes []string `json:"-"`
	// Labels and Annotations of the object itself (not of its pod template).
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// Namespace is a workload's namespace as the policy sees it: its name and
// labels (the tenant's among them).
type Namespace struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

// TopologyRequest is the topology a workload asks for.
type TopologyRequest struct {
	Required  string `json:"required"`
	Preferred string `json:"preferred"`
	// RequiredNodeLabel is a node label the kind's own key asks all pods
	// to share (JobSet's exclusive-topology annotation): the model's level
	// with that label is required, when it has one and Required is unset.
	RequiredNodeLabel string `json:"requiredNodeLabel,omitempty"`
}

// Role is one homogeneous set of pods in a workload.
type Role struct {
	Name       string `json:"name"`
	Replicas   int    `json:"replicas"`
	GPUsPerPod int    `json:"gpusPerPod"`
}

// Owner names the controller of a pod.
type Owner struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
}

// PodClaim is one entry of a pod template's spec.resourceClaims: either a
// ResourceClaim shared by every pod that names it, or a
// ResourceClaimTemplate from which each pod gets its own claim.
type PodClaim struct {
	// Role is the index in Workload.Roles of the template that references it.
	Role int
	// Name is the entry's name in the pod spec.
	Name string
	// ResourceClaimName names a shared ResourceClaim; TemplateName a
	// ResourceClaimTemplate. Exactly one is set.
	ResourceClaimName, TemplateName string
}
