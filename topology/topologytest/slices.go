package topologytest

import (
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// GPUs as NVIDIA's DRA driver publishes them, for tests: the DeviceClass
// it installs and one ResourceSlice per node.

// NvidiaDriver is the driver (and DeviceClass) name of NVIDIA's DRA
// driver.
const NvidiaDriver = "gpu.nvidia.com"

// GPUDeviceClass is the DeviceClass NVIDIA's driver installs for whole
// GPUs: its driver's devices of type "gpu".
func GPUDeviceClass() *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: resourcev1.SchemeGroupVersion.String(), Kind: "DeviceClass"},
		ObjectMeta: metav1.ObjectMeta{Name: NvidiaDriver},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"`,
		}}}},
	}
}

// GPUSlice is the ResourceSlice of node publishing gpus whole GPUs of
// product (its productName attribute; none when ""), named gpu-0 … .
func GPUSlice(node string, gpus int, product string) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: resourcev1.SchemeGroupVersion.String(), Kind: "ResourceSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + NvidiaDriver},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   NvidiaDriver,
			NodeName: ptr.To(node),
			Pool:     resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1},
		},
	}
	for i := range gpus {
		attrs := map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			"type":  {StringValue: ptr.To("gpu")},
			"index": {IntValue: ptr.To(int64(i))},
			"uuid":  {StringValue: ptr.To(fmt.Sprintf("GPU-%s-%d", node, i))},
		}
		if product != "" {
			attrs["productName"] = resourcev1.DeviceAttribute{StringValue: ptr.To(product)}
		}
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: attrs})
	}
	return s
}
