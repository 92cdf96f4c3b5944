package topology

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// DefaultGPUResource is NVIDIA's whole-GPU extended resource, the one
// definition of it: the resource a Request means when Resource is empty,
// a workload or job that names none asks for, and the authority model's
// default DeviceClass counts as.
const DefaultGPUResource = "nvidia.com/gpu"

// migPrefix starts every MIG profile resource (nvidia.com/mig-1g.10gb, …).
const migPrefix = "nvidia.com/mig-"

// SharedReplicaSuffix ends the name a device plugin advertises time-sliced
// (or MPS-shared) replicas of a GPU resource under when it renames them
// (the NVIDIA device plugin's renameByDefault): nvidia.com/gpu.shared,
// nvidia.com/mig-1g.10gb.shared. Each replica is a GPU resource of its
// own, counted and given quota under that name.
const SharedReplicaSuffix = ".shared"

// IsGPUResource reports whether name is an extended resource the model counts
// as GPU capacity: nvidia.com/gpu, a MIG profile nvidia.com/mig-<profile>, or
// amd.com/gpu, or the time-sliced replicas of one (<name>.shared). It is the
// one list of GPU resource names: nodes' capacity, pods' usage
// (PodUsage), admission and the model checker all read it.
func IsGPUResource(name string) bool {
	name = strings.TrimSuffix(name, SharedReplicaSuffix)
	switch name {
	case DefaultGPUResource, "amd.com/gpu":
		return true
	}
	return strings.HasPrefix(name, migPrefix) && len(name) > len(migPrefix)
}

// gpuAllocatable returns the node's allocatable count of each GPU resource,
// leaving out zeros; nil when it has none.
func gpuAllocatable(node *corev1.Node) map[string]int {
	var out map[string]int
	for name, q := range node.Status.Allocatable {
		if !IsGPUResource(string(name)) {
			continue
		}
		if v := q.Value(); v > 0 {
			if out == nil {
				out = make(map[string]int, 1)
			}
			out[string(name)] = int(v)
		}
	}
	return out
}

// podGPURequests returns what the pod takes of each GPU resource on its node,
// leaving out zeros; nil when nothing. It follows the scheduler's effective
// request: the larger of the app containers (plus restartable init
// containers, i.e. sidecars) and the largest init container (plus the
// sidecars started before it). A container's request falls back to its limit,
// since extended resources are usually given as limits only.
func podGPURequests(pod *corev1.Pod) map[string]int {
	var total, sidecars, initMax map[string]int
	add := func(dst *map[string]int, src map[string]int) {
		for r, v := range src {
			if *dst == nil {
				*dst = make(map[string]int, len(src))
			}
			(*dst)[r] += v
		}
	}
	for i := range pod.Spec.Containers {
		add(&total, containerGPURequests(&pod.Spec.Containers[i]))
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		req := containerGPURequests(c)
		var during map[string]int
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(&total, req)
			add(&sidecars, req)
			add(&during, sidecars)
		} else {
			add(&during, req)
			add(&during, sidecars)
		}
		for r, v := range during {
			if initMax == nil {
				initMax = make(map[string]int, len(during))
			}
			initMax[r] = max(initMax[r], v)
		}
	}
	for r, v := range initMax {
		if v > total[r] {
			if total == nil {
				total = make(map[string]int, len(initMax))
			}
			total[r] = v
		}
	}
	for r, v := range total {
		if v <= 0 {
			delete(total, r)
		}
	}
	if len(total) == 0 {
		return nil
	}
	return total
}

// containerGPURequests returns the container's GPU requests, each falling back
// to the limit when no request is given.
func containerGPURequests(c *corev1.Container) map[string]int {
	var out map[string]int
	set := func(name corev1.ResourceName, v int64) {
		if out == nil {
			out = make(map[string]int, 1)
		}
		out[string(name)] = int(v)
	}
	for name, q := range c.Resources.Requests {
		if IsGPUResource(string(name)) {
			set(name, q.Value())
		}
	}
	for name, q := range c.Resources.Limits {
		if _, requested := c.Resources.Requests[name]; !requested && IsGPUResource(string(name)) {
			set(name, q.Value())
		}
	}
	return out
}
