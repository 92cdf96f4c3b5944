package ledger

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// MilliSuffix marks, in the ledger's GPU maps (pods and reservations), a
// demand for shared GPUs (KAI's gpu-fraction and gpu-memory pods) counted
// exactly in thousandths of a device: SharedKey("nvidia.com/gpu") holds
// 250 per quarter-GPU pod. Usage folds it into the device resource,
// rounded up once per tenant, so 16 quarter-GPU pods use 4 GPUs.
const MilliSuffix = topology.SharedSuffix

// SharedKey is the ledger key of shared demand for resource, in milli-GPUs.
func SharedKey(resource string) string { return topology.SharedKey(resource) }

// podDemand is what a pod counts: its GPU extended resources as the
// scheduler computes them, plus its KAI-shared share in milli-GPUs (a
// gpu-fraction times its devices; a gpu-memory slice as its memory's share
// of the device memory mem gives for the product the pod asks for, as
// admission counted it, else as the whole device it occupies). share is
// what the pod shares, zero when nothing.
func podDemand(pod *corev1.Pod, mem topology.GPUMemory) (gpus map[string]int, share topology.Share) {
	gpus = topology.PodGPURequests(pod)
	share, ok := topology.PodShare(pod.Annotations, workload.PodProduct(&pod.Spec), mem)
	if ok {
		if gpus == nil {
			gpus = map[string]int{}
		}
		gpus[SharedKey(topology.SharedResource)] += share.Total()
	}
	return gpus, share
}

// remapMemory counts a gpu-memory pod's share again under mem (a new
// authority model), as its memory's share of the device memory of the
// product it asks for.
func remapMemory(e podEntry, mem topology.GPUMemory) podEntry {
	next := e.share
	next.Milli = 1000
	if dev, ok := mem.DeviceMiB(topology.SharedResource, e.product); ok {
		next.Milli = topology.MemoryMilli(next.MemMiB, dev)
	}
	gpus := e.gpus.Map()
	if gpus == nil {
		gpus = map[string]int{}
	}
	gpus[SharedKey(topology.SharedResource)] += next.Total() - e.share.Total()
	e.gpus, e.share = topology.CountsOf(gpus), next
	return e
}

// fold moves shared milli-GPU usage into its device resource, rounded up
// to whole GPUs: what input.usage holds. byRes is changed in place.
func fold(byRes map[string]Usage) map[string]Usage {
	for res, u := range byRes {
		base, ok := strings.CutSuffix(res, MilliSuffix)
		if !ok {
			continue
		}
		b := byRes[base]
		b.Total += ceilThousandths(u.Total)
		b.NonPreemptible += ceilThousandths(u.NonPreemptible)
		byRes[base] = b
		delete(byRes, res)
	}
	return byRes
}

func ceilThousandths(milli int) int {
	if milli <= 0 {
		return 0
	}
	return (milli + 999) / 1000
}

// foldAll folds every tenant's usage.
func foldAll(usage map[string]map[string]Usage) {
	for _, byRes := range usage {
		fold(byRes)
	}
}
