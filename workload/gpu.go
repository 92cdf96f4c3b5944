package workload

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mandate-dev/mandate/topology"
)

// podGPU is what one pod of a template asks for.
type podGPU struct {
	Resource string  // empty for a CPU-only pod
	Count    int     // devices (or MIG slices) the pod occupies
	Fraction float64 // KAI gpu-fraction, 0 when whole devices
	MemMiB   int64   // KAI gpu-memory, 0 when whole devices
}

// podGPUs computes the GPU request of one pod the way the scheduler does
// (topology.PodGPURequests: app containers plus sidecars, or the largest init
// container plus the sidecars started before it), after validating every
// container's GPU quantities. field is the path of the pod template in the
// object, for messages ("" for a Pod).
func podGPUs(annotations map[string]string, spec *corev1.PodSpec, field string) (podGPU, error) {
	for i := range spec.Containers {
		if err := validateContainer(&spec.Containers[i], joinField(field, fmt.Sprintf("spec.containers[%d]", i))); err != nil {
			return podGPU{}, err
		}
	}
	for i := range spec.InitContainers {
		if err := validateContainer(&spec.InitContainers[i], joinField(field, fmt.Sprintf("spec.initContainers[%d]", i))); err != nil {
			return podGPU{}, err
		}
	}
	effective := topology.PodGPURequests(&corev1.Pod{Spec: *spec})
	names := make([]string, 0, len(effective))
	for r := range effective {
		names = append(names, r)
	}
	sort.Strings(names)
	if len(names) > 1 {
		return podGPU{}, invalidf("%s asks for %s: a pod may use only one GPU resource", podField(field), strings.Join(names, " and "))
	}
	var got podGPU
	if len(names) == 1 {
		got = podGPU{Resource: names[0], Count: effective[names[0]]}
		if got.Count > MaxGPUsPerPod {
			return podGPU{}, invalidField(podField(field)+" "+names[0], got.Count, fmt.Sprintf("a pod may use at most %d", MaxGPUsPerPod))
		}
	}
	return withSharing(got, annotations, field)
}

// validateContainer checks a container's GPU requests and limits.
func validateContainer(c *corev1.Container, field string) error {
	seen := map[corev1.ResourceName]bool{}
	for _, list := range []struct {
		name string
		rl   corev1.ResourceList
	}{{"limits", c.Resources.Limits}, {"requests", c.Resources.Requests}} {
		names := make([]string, 0, len(list.rl))
		for name := range list.rl {
			names = append(names, string(name))
		}
		sort.Strings(names) // the first bad value reported is always the same
		for _, name := range names {
			rn := corev1.ResourceName(name)
			if !topology.IsGPUResource(name) || seen[rn] {
				continue
			}
			seen[rn] = true
			if _, err := wholeDevices(list.rl[rn], fmt.Sprintf("%s.resources.%s[%s]", field, list.name, name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// wholeDevices validates a GPU quantity: a whole number from 0 to
// MaxGPUsPerPod.
func wholeDevices(q resource.Quantity, field string) (int64, error) {
	allowed := fmt.Sprintf("must be a whole number of devices from 0 to %d", MaxGPUsPerPod)
	if q.Sign() < 0 || q.Cmp(*resource.NewQuantity(MaxGPUsPerPod, resource.DecimalSI)) > 0 {
		return 0, invalidField(field, q.String(), allowed)
	}
	n, ok := q.AsInt64()
	if !ok {
		return 0, invalidField(field, q.String(), allowed)
	}
	return n, nil
}

// withSharing applies KAI's GPU-sharing annotations: gpu-fraction or
// gpu-memory ask for part of one device (times gpu-fraction-num-devices), and
// such a pod occupies that many nvidia.com/gpu devices for placement and
// quota. KAI rejects sharing combined with a GPU resource request, and so
// does Mandate.
func withSharing(got podGPU, annotations map[string]string, field string) (podGPU, error) {
	fraction, hasFraction := annotations[AnnotationGPUFraction]
	memory, hasMemory := annotations[AnnotationGPUMemory]
	devices, hasDevices := annotations[AnnotationGPUFractionDevices]
	hasFraction, hasMemory = hasFraction && fraction != "", hasMemory && memory != ""
	annField := func(key string) string { return joinField(field, "metadata.annotations["+key+"]") }
	if !hasFraction && !hasMemory {
		if hasDevices {
			return podGPU{}, invalidf("%s needs %s or %s", annField(AnnotationGPUFractionDevices), AnnotationGPUFraction, AnnotationGPUMemory)
		}
		return got, nil
	}
	if hasFraction && hasMemory {
		return podGPU{}, invalidf("%s and %s are exclusive: ask for a fraction or for memory", annField(AnnotationGPUFraction), AnnotationGPUMemory)
	}
	if got.Resource != "" {
		return podGPU{}, invalidf("%s asks for %d %s and for a shared GPU: use one or the other", podField(field), got.Count, got.Resource)
	}
	out := podGPU{Resource: topology.SharedResource, Count: 1}
	if hasFraction {
		f, err := strconv.ParseFloat(fraction, 64)
		if err != nil || math.IsNaN(f) || f <= 0 || f >= 1 {
			return podGPU{}, invalidField(annField(AnnotationGPUFraction), fraction, "must be a number between 0 and 1, exclusive")
		}
		out.Fraction = f
	} else {
		m, err := strconv.ParseInt(memory, 10, 64)
		if err != nil || m <= 0 {
			return podGPU{}, invalidField(annField(AnnotationGPUMemory), memory, "must be a whole number of MiB greater than 0")
		}
		out.MemMiB = m
	}
	if hasDevices {
		n, err := strconv.Atoi(devices)
		if err != nil || n < 1 || n > MaxGPUsPerPod {
			return podGPU{}, invalidField(annField(AnnotationGPUFractionDevices), devices, fmt.Sprintf("must be a whole number from 1 to %d", MaxGPUsPerPod))
		}
		out.Count = n
	}
	return out, nil
}

// podField names a pod template in messages.
func podField(field string) string {
	if field == "" {
		return "the pod"
	}
	return field
}

// joinField joins field paths, either of which may be empty.
func joinField(parent, child string) string {
	switch {
	case parent == "":
		return child
	case child == "":
		return parent
	}
	return parent + "." + child
}

// MapGPUMemory counts a gpu-memory gang as its memory's share of a device
// of deviceMiB (the authority model's gpuMemoryMiB): each pod takes
// ceil-to-a-thousandth(memory/deviceMiB) of each of its devices, the
// gang's TotalMilliGPUs is the exact sum and TotalGPUs that rounded up.
// It does nothing for a gang that is not gpu-memory or for a deviceMiB of
// 0 (unknown): such pods keep counting whole devices.
func (w *Workload) MapGPUMemory(deviceMiB int64) {
	if w.GPUMemoryMiB <= 0 || deviceMiB <= 0 {
		return
	}
	milli := topology.MemoryMilli(w.GPUMemoryMiB, deviceMiB)
	w.GPUShareMilli = milli
	w.TotalMilliGPUs = 0
	for _, r := range w.Roles {
		w.TotalMilliGPUs += int64(r.Replicas) * int64(r.GPUsPerPod) * int64(milli)
	}
	w.TotalGPUs = topology.WholeGPUs(int(w.TotalMilliGPUs))
}
