package workload

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMapGPUMemory: a gpu-memory gang counts its memory's share of a
// device once the model gives the device memory, rounded up to a
// thousandth per pod and once for the gang; unmapped it counts whole
// devices and is not a shared placement.
func TestMapGPUMemory(t *testing.T) {
	w := mustNormalize(t, job("parallelism: 16\n  completions: 16", "annotations: {}",
		"\n    metadata: {annotations: {gpu-memory: '20480'}}"))
	assert.Equal(t, 16, w.TotalGPUs, "unmapped: a whole device each")
	assert.Equal(t, int64(16000), w.TotalMilliGPUs)
	assert.Zero(t, w.GPUShareMilli, "unmapped: whole devices")

	w.MapGPUMemory(0)
	assert.Equal(t, 16, w.TotalGPUs, "an unknown device memory maps nothing")

	w.MapGPUMemory(81920)
	assert.Equal(t, 250, w.GPUShareMilli)
	assert.Equal(t, int64(4000), w.TotalMilliGPUs)
	assert.Equal(t, 4, w.TotalGPUs)

	// 30000 of 81920 MiB is 0.3662…: 367 milli per pod, 5872 for 16, 6 GPUs.
	w.GPUMemoryMiB = 30000
	w.MapGPUMemory(81920)
	assert.Equal(t, 367, w.GPUShareMilli)
	assert.Equal(t, int64(16*367), w.TotalMilliGPUs)
	assert.Equal(t, 6, w.TotalGPUs)

	// Over two devices per pod, and more memory than a device has.
	w = mustNormalize(t, pod(", annotations: {gpu-memory: '100000', gpu-fraction-num-devices: '2'}", "{}"))
	w.MapGPUMemory(81920)
	assert.Equal(t, 1000, w.GPUShareMilli)
	assert.Equal(t, int64(2000), w.TotalMilliGPUs)
	assert.Equal(t, 2, w.TotalGPUs)

	// A fraction gang is shared already, and MapGPUMemory leaves it be.
	w = mustNormalize(t, pod(", annotations: {gpu-fraction: '0.3'}", "{}"))
	assert.Equal(t, 300, w.GPUShareMilli)
	w.MapGPUMemory(81920)
	assert.Equal(t, int64(300), w.TotalMilliGPUs)
}
