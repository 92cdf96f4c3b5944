package modelcheck

import (
	"sort"
	"strings"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/topology"
)

// checkGPUMemory: gpuMemoryMiB maps the memory of devices a gpu-memory pod
// shares: whole GPUs (nvidia.com/gpu, amd.com/gpu), never a MIG profile,
// whose slices are not shared by memory, nor a resource that is no GPU.
func checkGPUMemory(d *model.Model, r *reporter) {
	resources := make([]string, 0, len(d.GPUMemoryMiB))
	for res := range d.GPUMemoryMiB {
		resources = append(resources, res)
	}
	sort.Strings(resources)
	for _, res := range resources {
		switch {
		case !topology.IsGPUResource(res):
			r.add(path("gpuMemoryMiB", res), "%q is not a GPU resource: gpuMemoryMiB gives the device memory of whole GPUs (nvidia.com/gpu)", res)
		case strings.HasPrefix(res, "nvidia.com/mig-"):
			r.add(path("gpuMemoryMiB", res), "%s is a MIG profile: its slices are not shared by memory, so gpuMemoryMiB maps whole GPUs (nvidia.com/gpu)", res)
		}
	}
}
