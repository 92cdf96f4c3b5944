package review

import (
	"fmt"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/workload"
)

// CodeGPUMemoryUnmapped is the warning on a KAI gpu-memory workload whose
// device memory the authority model does not give (gpuMemoryMiB): it is
// counted as whole devices. Go's, like the DRA codes: the mapping is the
// normaliser's, before the policy decides.
const CodeGPUMemoryUnmapped = "GPU_MEMORY_UNMAPPED"

// mapGPUMemory counts a gpu-memory workload as its memory's share of a
// device, from the model's gpuMemoryMiB for its GPU resource and product
// (workload.MapGPUMemory); it returns the warning that says so when the
// model does not map it and its pods count whole devices. decider is
// asked for the model when it knows one.
func mapGPUMemory(w *workload.Workload, m model.Model) []string {
	if w.GPUMemoryMiB <= 0 {
		return nil
	}
	if mib, ok := m.GPUMemoryMiB.DeviceMiB(w.GPUResource, w.GPUProduct); ok {
		w.MapGPUMemory(mib)
		return nil
	}
	product := ""
	if w.GPUProduct != "" {
		product = " " + w.GPUProduct
	}
	return []string{fmt.Sprintf("%s: the authority model's gpuMemoryMiB gives no device memory for%s %s, so each pod's gpu-memory of %d MiB counts as %d whole %s against quota and placement",
		CodeGPUMemoryUnmapped, product, w.GPUResource, w.GPUMemoryMiB, w.GPUsPerPod, plural(w.GPUsPerPod, "device", "devices"))}
}

// modelOf is the authority model decider decides with; the zero Model
// for a decider that does not say (a test's).
func modelOf(decider Decider) model.Model {
	if md, ok := decider.(modeled); ok {
		return md.Model()
	}
	return model.Model{}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
