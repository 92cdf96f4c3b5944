package modelcheck

import (
	"sort"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/topology"
)

// checkDeviceClasses: every DRA DeviceClass the model counts as GPUs maps
// to a GPU resource (topology.IsGPUResource), the resources the
// quota and placement count; "" counts a class as nothing.
func checkDeviceClasses(d *model.Model, r *reporter) {
	classes := make([]string, 0, len(d.DeviceClasses))
	for c := range d.DeviceClasses {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	for _, c := range classes {
		if res := d.DeviceClasses[c]; res != "" && !topology.IsGPUResource(res) {
			r.add(path("deviceClasses", c), "DeviceClass %s counts as %q, which is not a GPU resource (nvidia.com/gpu, amd.com/gpu, nvidia.com/mig-<profile>, or one's time-sliced <resource>.shared)", c, res)
		}
	}
}
