package ledger

import (
	"strings"

	"github.com/mandate-dev/mandate/topology"
)

// MilliSuffix marks, in the ledger's GPU maps (pods and reservations), a
// demand for shared GPUs (KAI's gpu-fraction and gpu-memory pods) counted
// exactly in thousandths of a device: SharedKey("nvidia.com/gpu") holds
// 250 per quarter-GPU pod. Usage folds it into the device resource,
// rounded up once per tenant, so 16 quarter-GPU pods use 4 GPUs.
const MilliSuffix = topology.SharedSuffix

// SharedKey is the ledger key of shared demand for resource, in milli-GPUs.
func SharedKey(resource string) string { return topology.SharedKey(resource) }

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
