package review

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// TestReservationOfAProduct: an admitted workload of one GPU product holds
// its GPUs under the resource's key and the product's, whole devices and
// KAI-shared ones (milli-GPUs) alike, so the product's quota sees the
// fractions admitted and not yet counted as pods.
func TestReservationOfAProduct(t *testing.T) {
	const h100 = "NVIDIA-H100-80GB-HBM3"
	admitted := evaluator.Decision{Allowed: true}
	whole := workload.Workload{GPUResource: "nvidia.com/gpu", TotalGPUs: 8, GPUProduct: h100}
	assert.Equal(t, map[string]int{"nvidia.com/gpu": 8, topology.ProductKey("nvidia.com/gpu", h100): 8},
		reservation(whole, admitted, false).GPUs)
	halves := workload.Workload{GPUResource: "nvidia.com/gpu", TotalGPUs: 4, TotalMilliGPUs: 4000, GPUFraction: 0.5, GPUProduct: h100}
	assert.Equal(t, map[string]int{topology.SharedKey("nvidia.com/gpu"): 4000, topology.SharedKey(topology.ProductKey("nvidia.com/gpu", h100)): 4000},
		reservation(halves, admitted, false).GPUs)
	halves.GPUProduct = ""
	assert.Equal(t, map[string]int{topology.SharedKey("nvidia.com/gpu"): 4000}, reservation(halves, admitted, false).GPUs, "no product, no product key")
	assert.Empty(t, reservation(halves, admitted, true).GPUs, "a dry run holds nothing")
}
