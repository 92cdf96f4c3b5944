package topology

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

// DeviceResourceFunc maps a DRA DeviceClass to the quota resource its
// devices count as; ok is false for a class not counted as GPUs
// (model.Model.DeviceResource).
type DeviceResourceFunc func(class string) (resource string, ok bool)

// ClaimDevices is what a DRA claim (or claim template) asks for, by quota
// resource, and the requests that could not be counted, said for a warning.
type ClaimDevices struct {
	ByResource map[string]int
	Unmapped   []string
}

// RequestedDevices counts a claim's requests by quota resource: the one
// count that admission (a workload's claims) and running usage (a claim
// not allocated yet) share. A request with alternatives (firstAvailable)
// counts its first, the one the scheduler tries first; allocationMode All
// is left uncounted, its number known only at allocation.
func RequestedDevices(requests []resourcev1.DeviceRequest, resourceOf DeviceResourceFunc) ClaimDevices {
	out := ClaimDevices{ByResource: map[string]int{}}
	for _, r := range requests {
		class, mode, count := "", resourcev1.DeviceAllocationModeExactCount, int64(1)
		switch {
		case r.Exactly != nil:
			class, mode, count = r.Exactly.DeviceClassName, r.Exactly.AllocationMode, r.Exactly.Count
		case len(r.FirstAvailable) > 0:
			sub := r.FirstAvailable[0]
			class, mode, count = sub.DeviceClassName, sub.AllocationMode, sub.Count
		default:
			continue
		}
		res, ok := resourceOf(class)
		switch {
		case !ok:
			out.Unmapped = append(out.Unmapped, fmt.Sprintf("request %q asks for DeviceClass %s, which the authority model does not count as GPUs (map it in deviceClasses), so it is not counted", r.Name, class))
		case mode == resourcev1.DeviceAllocationModeAll:
			out.Unmapped = append(out.Unmapped, fmt.Sprintf("request %q asks for all devices of DeviceClass %s, a number known only at allocation, so it is not counted", r.Name, class))
		default:
			out.ByResource[res] += int(max(count, 1))
		}
	}
	return out
}

// ClaimGPUs is what a ResourceClaim holds, by quota resource: once
// allocated, one device per allocation result, of its request's
// DeviceClass (a firstAvailable result names "request/subrequest"); before,
// what it requests (RequestedDevices), the demand that admission reserved.
// Devices of classes resourceOf does not count are left out; nil when
// nothing counts.
func ClaimGPUs(c *resourcev1.ResourceClaim, resourceOf DeviceResourceFunc) map[string]int {
	if c.Status.Allocation == nil {
		return nonEmpty(RequestedDevices(c.Spec.Devices.Requests, resourceOf).ByResource)
	}
	classes := map[string]string{} // request (or request/subrequest) → DeviceClass
	for _, r := range c.Spec.Devices.Requests {
		if r.Exactly != nil {
			classes[r.Name] = r.Exactly.DeviceClassName
		}
		for _, sub := range r.FirstAvailable {
			classes[r.Name+"/"+sub.Name] = sub.DeviceClassName
		}
	}
	out := map[string]int{}
	for _, res := range c.Status.Allocation.Devices.Results {
		class, ok := classes[res.Request]
		if !ok {
			// A result naming the parent of subrequests: its request's first.
			parent, _, _ := strings.Cut(res.Request, "/")
			for _, r := range c.Spec.Devices.Requests {
				if r.Name == parent && len(r.FirstAvailable) > 0 {
					class, ok = r.FirstAvailable[0].DeviceClassName, true
				}
			}
		}
		if !ok {
			continue
		}
		if name, counted := resourceOf(class); counted {
			out[name]++
		}
	}
	return nonEmpty(out)
}

func nonEmpty(m map[string]int) map[string]int {
	for k, n := range m {
		if n <= 0 {
			delete(m, k)
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// PodClaimNames are the names of the ResourceClaims a pod holds: each of
// spec.resourceClaims' resourceClaimName, or, for a claim made from a
// template, the generated claim status.resourceClaimStatuses names (none
// until the controller has made it), sorted, without duplicates.
func PodClaimNames(pod *corev1.Pod) []string {
	if len(pod.Spec.ResourceClaims) == 0 {
		return nil // most pods: nothing to allocate on the informers' path
	}
	generated := map[string]string{}
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			generated[s.Name] = *s.ResourceClaimName
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range pod.Spec.ResourceClaims {
		name := generated[c.Name]
		if c.ResourceClaimName != nil {
			name = *c.ResourceClaimName
		}
		if name != "" && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// PodPendingTemplates are the ResourceClaimTemplates of the pod's claims
// that the resource claim controller has not made yet (no generated name
// in status.resourceClaimStatuses), one per such claim, in spec order:
// until the claims exist, the pod counts their templates' requests.
func PodPendingTemplates(pod *corev1.Pod) []string {
	if len(pod.Spec.ResourceClaims) == 0 {
		return nil
	}
	made := map[string]bool{}
	for _, s := range pod.Status.ResourceClaimStatuses {
		made[s.Name] = true // made, or (no name) none needed
	}
	var out []string
	for _, c := range pod.Spec.ResourceClaims {
		if c.ResourceClaimName == nil && c.ResourceClaimTemplateName != nil && !made[c.Name] {
			out = append(out, *c.ResourceClaimTemplateName)
		}
	}
	return out
}
