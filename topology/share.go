package topology

import (
	"math"
	"strconv"
)

// KAI's GPU-sharing annotations on a pod: it asks for part of a device
// (gpu-fraction, or gpu-memory in MiB), on gpu-fraction-num-devices
// devices (1 when absent), instead of an extended resource. The workload
// package validates them at admission under the same names.
const (
	AnnotationGPUFraction        = "gpu-fraction"
	AnnotationGPUMemory          = "gpu-memory"
	AnnotationGPUFractionDevices = "gpu-fraction-num-devices"
)

// maxSharedDevices bounds gpu-fraction-num-devices, as the workload
// package's MaxGPUsPerPod bounds a pod's devices.
const maxSharedDevices = 1024

// MilliPerGPU is one whole device in milli-GPUs, the unit GPUs shared by
// fraction or memory are counted in (SharedKey's demand, a workload's
// TotalMilliGPUs, the simulator's shares): the one definition of it.
const MilliPerGPU = 1000

// SharedSuffix marks, in a node's used GPUs (and in the quota ledger's
// maps), the milli-GPUs that shared pods take of a resource's devices:
// SharedKey("nvidia.com/gpu") holds 250 per quarter-GPU pod.
//
// "#" is in neither a resource name (a qualified name) nor a label value
// (a GPU product), and not the "@" that joins a resource and a product
// (ProductKey): a product's shared demand is
// "nvidia.com/gpu@NVIDIA-H100-80GB-HBM3#milli", and no product name can
// make its key read as shared demand, or the reverse.
const SharedSuffix = "#milli"

// SharedKey is the key of shared demand for resource, in milli-GPUs.
func SharedKey(resource string) string { return resource + SharedSuffix }

// SharedResource is the device resource KAI's shared pods take part of.
const SharedResource = DefaultGPUResource

// sharedGPUKey is SharedKey(SharedResource), without building it per node.
const sharedGPUKey = SharedResource + SharedSuffix

// GPUMemory says how much memory one device of a GPU resource has, so that
// a gpu-memory request maps to a fraction of a device: GPU resource →
// DeviceMemory. It is the authority model's gpuMemoryMiB.
type GPUMemory map[string]DeviceMemory

// DeviceMemory is the memory of one device in MiB: per GPU product
// (nvidia.com/gpu.product), else Default. 0 means unknown.
type DeviceMemory struct {
	Default  int64            `json:"default,omitempty"`
	Products map[string]int64 `json:"products,omitempty"`
}

// DeviceMiB is the memory of one device of resource of product ("" for
// any): the product's entry, else the resource's default; ok is false
// when the model does not say.
func (g GPUMemory) DeviceMiB(resource, product string) (int64, bool) {
	d, ok := g[resource]
	if !ok {
		return 0, false
	}
	if mib := d.Products[product]; product != "" && mib > 0 {
		return mib, true
	}
	return d.Default, d.Default > 0
}

// MemoryMilli is the share of one device of deviceMiB that memMiB asks
// for, in milli-GPUs rounded up (never less than asked), at least 1 and at
// most the whole device (MilliPerGPU).
func MemoryMilli(memMiB, deviceMiB int64) int {
	if memMiB <= 0 || deviceMiB <= 0 || memMiB >= deviceMiB {
		return MilliPerGPU
	}
	return int((memMiB*MilliPerGPU + deviceMiB - 1) / deviceMiB) // memMiB < deviceMiB: no overflow below 9e15 MiB
}

// FractionMilli is a GPU fraction in milli-GPUs, rounded up so that a
// fraction finer than a thousandth is never counted as less than it asks.
func FractionMilli(f float64) int {
	return int(math.Ceil(f*MilliPerGPU - 1e-9))
}

// Share is what a KAI-shared pod takes: Milli thousandths of each of
// Devices devices of SharedResource.
type Share struct {
	Devices int
	Milli   int
	// MemMiB is the gpu-memory asked for (0 for a gpu-fraction pod); a
	// gpu-memory pod GPUMemory does not map takes whole devices (Milli
	// MilliPerGPU).
	MemMiB int64
}

// Total is the pod's shared demand in milli-GPUs.
func (s Share) Total() int { return s.Devices * s.Milli }

// PodShare reads KAI's sharing annotations; ok is false when the pod
// shares no GPU or they do not parse (the workload package refuses such a
// pod at admission). A gpu-memory pod's share is its memory over the
// device memory of product (the node's, else the pod's) in mem.
func PodShare(ann map[string]string, product string, mem GPUMemory) (Share, bool) {
	s := Share{Devices: 1}
	if v, ok := ann[AnnotationGPUFractionDevices]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxSharedDevices {
			return Share{}, false
		}
		s.Devices = n
	}
	if v := ann[AnnotationGPUFraction]; v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0 && f < 1) {
			return Share{}, false
		}
		s.Milli = FractionMilli(f)
		return s, true
	}
	if v := ann[AnnotationGPUMemory]; v != "" {
		m, err := strconv.ParseInt(v, 10, 64)
		if err != nil || m <= 0 {
			return Share{}, false
		}
		s.MemMiB, s.Milli = m, MilliPerGPU
		if dev, ok := mem.DeviceMiB(SharedResource, product); ok {
			s.Milli = MemoryMilli(m, dev)
		}
		return s, true
	}
	return Share{}, false
}

// WholeGPUs is how many whole devices milli milli-GPUs round up to: what
// shared pods occupy of one node (they pack onto shared devices), and a
// gang's shared demand in whole GPUs; 0 for none.
func WholeGPUs(milli int) int {
	if milli <= 0 {
		return 0
	}
	return (milli + MilliPerGPU - 1) / MilliPerGPU
}
