package ledger

import (
	"strconv"
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
const MilliSuffix = "@milli"

// SharedKey is the ledger key of shared demand for resource, in milli-GPUs.
func SharedKey(resource string) string { return resource + MilliSuffix }

// podDemand is what a pod counts: its GPU extended resources as the
// scheduler computes them, plus its KAI-shared share in milli-GPUs (a
// gpu-fraction times its devices; a gpu-memory slice as the whole device
// it occupies).
func podDemand(pod *corev1.Pod) map[string]int {
	gpus := topology.PodGPURequests(pod)
	if milli := sharedMilli(pod.Annotations); milli > 0 {
		if gpus == nil {
			gpus = map[string]int{}
		}
		gpus[SharedKey("nvidia.com/gpu")] += milli
	}
	return gpus
}

// sharedMilli reads KAI's sharing annotations as the normaliser does
// (workload.withSharing validated them at admission); 0 when the pod
// shares no GPU or the annotations do not parse.
func sharedMilli(ann map[string]string) int {
	devices := 1
	if v, ok := ann[workload.AnnotationGPUFractionDevices]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > workload.MaxGPUsPerPod {
			return 0
		}
		devices = n
	}
	if v := ann[workload.AnnotationGPUFraction]; v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0 && f < 1) {
			return 0
		}
		return int(workload.FractionMilli(f)) * devices
	}
	if v := ann[workload.AnnotationGPUMemory]; v != "" {
		if m, err := strconv.ParseInt(v, 10, 64); err == nil && m > 0 {
			return 1000 * devices
		}
	}
	return 0
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
