package topology

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

func nvidiaOnly(class string) (string, bool) {
	if class == "gpu.nvidia.com" {
		return "nvidia.com/gpu", true
	}
	return "", false
}

// TestClaimGPUs: a claim counts what it requests until allocated, then one
// device per allocation result of a counted class (a firstAvailable result
// by its subrequest's class).
func TestClaimGPUs(t *testing.T) {
	c := &resourcev1.ResourceClaim{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
		{Name: "big", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", Count: 4}},
		{Name: "nic", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "nic.example.com"}},
		{Name: "any", FirstAvailable: []resourcev1.DeviceSubRequest{
			{Name: "nic", DeviceClassName: "nic.example.com"}, {Name: "gpu", DeviceClassName: "gpu.nvidia.com"}}},
	}}}}
	if got, want := ClaimGPUs(c, nvidiaOnly), map[string]int{"nvidia.com/gpu": 4}; !reflect.DeepEqual(got, want) {
		t.Errorf("not allocated: %v, want %v", got, want)
	}
	c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
		{Request: "big", Device: "g0"}, {Request: "big", Device: "g1"}, {Request: "nic", Device: "n0"}, {Request: "any/gpu", Device: "g2"},
	}}}
	if got, want := ClaimGPUs(c, nvidiaOnly), map[string]int{"nvidia.com/gpu": 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("allocated: %v, want %v", got, want)
	}
	c.Status.Allocation.Devices.Results = nil
	if got := ClaimGPUs(c, nvidiaOnly); got != nil {
		t.Errorf("allocated no counted device: %v, want nil", got)
	}
}

// TestPodClaimNames: a pod holds the claims it names and those generated
// for its templates, once each.
func TestPodClaimNames(t *testing.T) {
	name := func(s string) *string { return &s }
	p := &corev1.Pod{Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{
		{Name: "a", ResourceClaimName: name("shared")},
		{Name: "b", ResourceClaimTemplateName: name("tpl")},
		{Name: "c", ResourceClaimTemplateName: name("tpl")},
		{Name: "d", ResourceClaimName: name("shared")},
	}}, Status: corev1.PodStatus{ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "b", ResourceClaimName: name("p-b-x")}}}}
	if got, want := PodClaimNames(p), []string{"p-b-x", "shared"}; !reflect.DeepEqual(got, want) {
		t.Errorf("PodClaimNames = %v, want %v", got, want)
	}
}
