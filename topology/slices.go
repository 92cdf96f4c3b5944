package topology

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

// GPUs as DRA publishes them: a driver lists a node's devices in
// ResourceSlices, and a DeviceClass selects some of them by CEL
// expressions over their attributes and capacities. The model counts a
// device as the quota resource of the first DeviceClass (by name) the
// authority model counts as GPUs whose selectors all match it, evaluated
// with Kubernetes' own DRA CEL library as the scheduler evaluates them.

// ProductAttribute is the device attribute that names a GPU's product
// (NVIDIA's DRA driver publishes productName, e.g. "NVIDIA H100 80GB
// HBM3"); it is read in the node label's spelling, spaces as "-"
// (NVIDIA-H100-80GB-HBM3), so per-product quota and pinning see one name.
const ProductAttribute = "productName"

// NodeDevices is what the DRA ResourceSlices of one node publish, counted
// by the authority model's DeviceClasses.
type NodeDevices struct {
	// GPUs are its devices by quota resource, tainted ones left out.
	GPUs map[string]int `json:"gpus,omitempty"`
	// Tainted are its devices a NoSchedule or NoExecute taint keeps from
	// new claims, by quota resource.
	Tainted map[string]int `json:"tainted,omitempty"`
	// Taints are the NoSchedule and NoExecute taints of its tainted
	// devices, as key:Effect, sorted, each once.
	Taints []string `json:"taints,omitempty"`
	// Product is the GPU product its devices' ProductAttribute names ("" when none
	// does).
	Product string `json:"product,omitempty"`
}

// Empty says whether the node publishes no counted device.
func (d NodeDevices) Empty() bool {
	return len(d.GPUs) == 0 && len(d.Tainted) == 0 && d.Product == ""
}

func (d NodeDevices) equal(o NodeDevices) bool {
	return d.Product == o.Product && maps.Equal(d.GPUs, o.GPUs) && maps.Equal(d.Tainted, o.Tainted) && slices.Equal(d.Taints, o.Taints)
}

// DeviceCounter counts ResourceSlice devices by the DeviceClasses the
// authority model counts as GPUs. It is immutable and safe for concurrent
// use.
type DeviceCounter struct {
	classes []countedClass
}

type countedClass struct {
	name, resource string
	selectors      []dracel.CompilationResult
}

// celCache compiles each selector expression once for the process.
var celCache = dracel.NewCache(256, dracel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: true})

// NewDeviceCounter compiles the selectors of the DeviceClasses that
// resourceOf counts as GPUs. A class whose selector does not compile
// selects no device, as the scheduler allocates none of it; it is said in
// the error, which does not stop the others from counting.
func NewDeviceCounter(classes []*resourcev1.DeviceClass, resourceOf DeviceResourceFunc) (*DeviceCounter, error) {
	sorted := slices.Clone(classes)
	slices.SortFunc(sorted, func(a, b *resourcev1.DeviceClass) int { return strings.Compare(a.Name, b.Name) })
	dc := &DeviceCounter{}
	var errs []string
	for _, c := range sorted {
		res, ok := resourceOf(c.Name)
		if !ok || res == "" {
			continue
		}
		cc := countedClass{name: c.Name, resource: res}
		broken := false
		for _, s := range c.Spec.Selectors {
			if s.CEL == nil {
				continue
			}
			r := celCache.GetOrCompile(s.CEL.Expression)
			if r.Error != nil {
				errs = append(errs, fmt.Sprintf("DeviceClass %s: selector %q: %v", c.Name, s.CEL.Expression, r.Error))
				broken = true
				break
			}
			cc.selectors = append(cc.selectors, r)
		}
		if !broken {
			dc.classes = append(dc.classes, cc)
		}
	}
	if len(errs) > 0 {
		return dc, fmt.Errorf("unable to compile the selectors of %s", strings.Join(errs, "; "))
	}
	return dc, nil
}

// Classes are the names of the DeviceClasses the counter counts, sorted.
func (dc *DeviceCounter) Classes() []string {
	out := make([]string, 0, len(dc.classes))
	for _, c := range dc.classes {
		out = append(out, c.name)
	}
	return out
}

// Count counts the devices of one node's ResourceSlices. Of a pool
// published in several generations only the newest counts, as the
// scheduler allocates only from it.
func (dc *DeviceCounter) Count(ctx context.Context, nodeSlices []*resourcev1.ResourceSlice) NodeDevices {
	newest := map[string]int64{}
	for _, s := range nodeSlices {
		k := s.Spec.Driver + "/" + s.Spec.Pool.Name
		newest[k] = max(newest[k], s.Spec.Pool.Generation)
	}
	var out NodeDevices
	products := map[string]int{}
	for _, s := range nodeSlices {
		if s.Spec.Pool.Generation < newest[s.Spec.Driver+"/"+s.Spec.Pool.Name] {
			continue
		}
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			res := dc.classify(ctx, s.Spec.Driver, d)
			if res == "" {
				continue
			}
			if p := deviceProduct(s.Spec.Driver, d); p != "" {
				products[p]++
			}
			into := &out.GPUs
			if Tainted(d.Taints) {
				into = &out.Tainted
				for _, t := range d.Taints {
					if t.Effect == resourcev1.DeviceTaintEffectNoSchedule || t.Effect == resourcev1.DeviceTaintEffectNoExecute {
						out.Taints = append(out.Taints, t.Key+":"+string(t.Effect))
					}
				}
			}
			if *into == nil {
				*into = map[string]int{}
			}
			(*into)[res]++
		}
	}
	slices.Sort(out.Taints)
	out.Taints = slices.Compact(out.Taints)
	// A node of one product, as a node label says; with several the most
	// published (then the first by name) names it.
	for p, n := range products {
		if out.Product == "" || n > products[out.Product] || (n == products[out.Product] && p < out.Product) {
			out.Product = p
		}
	}
	return out
}

// classify is the quota resource the device counts as; "" for none.
func (dc *DeviceCounter) classify(ctx context.Context, driver string, d *resourcev1.Device) string {
	in := dracel.Device{Driver: driver, AllowMultipleAllocations: d.AllowMultipleAllocations, Attributes: d.Attributes, Capacity: d.Capacity}
	for _, c := range dc.classes {
		all := true
		for _, sel := range c.selectors {
			ok, _, err := sel.DeviceMatches(ctx, in)
			if err != nil || !ok {
				all = false
				break
			}
		}
		if all {
			return c.resource
		}
	}
	return ""
}

// Tainted says whether taints keep a device from new claims that do not
// tolerate them: a NoSchedule or NoExecute taint.
func Tainted(taints []resourcev1.DeviceTaint) bool {
	for _, t := range taints {
		if t.Effect == resourcev1.DeviceTaintEffectNoSchedule || t.Effect == resourcev1.DeviceTaintEffectNoExecute {
			return true
		}
	}
	return false
}

// deviceProduct is the product the device's ProductAttribute names,
// unqualified or qualified by its driver, in the node label's spelling.
func deviceProduct(driver string, d *resourcev1.Device) string {
	for _, name := range []resourcev1.QualifiedName{ProductAttribute, resourcev1.QualifiedName(driver + "/" + ProductAttribute)} {
		if a, ok := d.Attributes[name]; ok && a.StringValue != nil && *a.StringValue != "" {
			return strings.ReplaceAll(strings.TrimSpace(*a.StringValue), " ", "-")
		}
	}
	return ""
}

// SliceNode is the node whose devices a ResourceSlice publishes; "" for a
// slice of devices that are not node-local (a node selector or all
// nodes), which the model does not count as a node's capacity.
func SliceNode(s *resourcev1.ResourceSlice) string {
	if s.Spec.NodeName != nil {
		return *s.Spec.NodeName
	}
	return ""
}

// NodeCapacity is a node's GPUs by resource: its allocatable extended
// resources and the untainted devices its ResourceSlices publish; nil
// when none. It is the capacity the cluster model counts (UpsertNode with
// SetNodeDevices), for reports that must agree with it.
func NodeCapacity(node *corev1.Node, d NodeDevices) map[string]int {
	return addDevices(gpuAllocatable(node), d)
}

func addDevices(alloc map[string]int, d NodeDevices) map[string]int {
	if len(d.GPUs) == 0 {
		return alloc
	}
	out := make(map[string]int, len(alloc)+len(d.GPUs))
	maps.Copy(out, alloc)
	for r, n := range d.GPUs {
		out[r] += n
	}
	return out
}
