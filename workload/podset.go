package workload

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mandate-dev/mandate/topology"
)

// podSet is one role of a workload: a pod template run Replicas times.
type podSet struct {
	Name     string
	Replicas int
	// Pointer is the JSON pointer to the template in the object ("" when
	// the object is itself a Pod); Field is the same place as a field path
	// for messages.
	Pointer, Field string
	Template       corev1.PodTemplateSpec
}

// fromPodSets fills the gang and GPU fields of w from its roles, in order:
// Pods, Roles, GPUsPerPod, TotalGPUs, GPUResource, GPUFraction, GPUMemoryMiB,
// GPUProduct, Templates, and PriorityClass and Scheduler unless the kind set
// them already (object-level fields win; else the first role that sets one).
func fromPodSets(w *Workload, sets []podSet) error {
	if len(sets) == 0 {
		return invalidf("the workload has no pod templates")
	}
	var (
		products    []string
		sharing     podGPU
		sharingRole string
	)
	w.Roles = make([]Role, 0, len(sets))
	w.Templates = make([]string, 0, len(sets))
	for _, s := range sets {
		spec := &s.Template.Spec
		if len(spec.Containers) == 0 {
			return missingField(joinField(s.Field, "spec.containers"), "a pod runs at least one container")
		}
		gpu, err := podGPUs(s.Template.Annotations, spec, s.Field)
		if err != nil {
			return err
		}
		w.Pods += s.Replicas
		if w.Pods > MaxPods {
			return invalidField("the total replica count", w.Pods, fmt.Sprintf("must be at most %d pods", MaxPods))
		}
		w.Roles = append(w.Roles, Role{Name: s.Name, Replicas: s.Replicas, GPUsPerPod: gpu.Count})
		w.Templates = append(w.Templates, s.Pointer)
		w.TotalGPUs += s.Replicas * gpu.Count
		w.GPUsPerPod = max(w.GPUsPerPod, gpu.Count)
		if gpu.Resource != "" {
			switch {
			case w.GPUResource == "":
				w.GPUResource, sharing, sharingRole = gpu.Resource, gpu, s.Name
			case w.GPUResource != gpu.Resource:
				return invalidf("role %q asks for %s but role %q for %s: a gang may use only one GPU resource",
					sharingRole, w.GPUResource, s.Name, gpu.Resource)
			case sharing.Fraction != gpu.Fraction || sharing.MemMiB != gpu.MemMiB:
				return invalidf("roles %q and %q share GPUs differently (%s vs %s): a gang may use one kind of GPU share",
					sharingRole, s.Name, sharing.describe(), gpu.describe())
			}
		}
		for _, rc := range spec.ResourceClaims {
			c := PodClaim{Role: len(w.Roles) - 1, Name: rc.Name}
			switch {
			case rc.ResourceClaimName != nil && *rc.ResourceClaimName != "":
				c.ResourceClaimName = *rc.ResourceClaimName
			case rc.ResourceClaimTemplateName != nil && *rc.ResourceClaimTemplateName != "":
				c.TemplateName = *rc.ResourceClaimTemplateName
			default:
				continue
			}
			w.Claims = append(w.Claims, c)
		}
		if p := product(spec); p != "" && !contains(products, p) {
			products = append(products, p)
		}
		if w.PriorityClass == "" {
			w.PriorityClass = spec.PriorityClassName
		}
		if w.Scheduler == "" {
			w.Scheduler = spec.SchedulerName
		}
	}
	if w.Pods < 1 {
		return invalidField("the total replica count", w.Pods, "a workload runs at least one pod")
	}
	if len(products) > 1 {
		return invalidf("pod templates ask for different GPU products %s: a gang may use one product", strings.Join(products, " and "))
	}
	if len(products) == 1 {
		w.GPUProduct = products[0]
	}
	w.GPUFraction, w.GPUMemoryMiB = sharing.Fraction, sharing.MemMiB
	if sharing.Fraction > 0 {
		// KAI fractions count as the fraction against quota, exactly in
		// milli-GPUs, rounded up to whole GPUs only for the gang's total:
		// 16 pods at gpu-fraction 0.25 count 4 GPUs, not 16.
		w.TotalMilliGPUs = 0
		for _, r := range w.Roles {
			w.TotalMilliGPUs += int64(r.Replicas) * int64(r.GPUsPerPod) * FractionMilli(sharing.Fraction)
		}
		w.TotalGPUs = topology.WholeGPUs(int(w.TotalMilliGPUs))
		w.GPUShareMilli = int(FractionMilli(sharing.Fraction))
	} else {
		w.TotalMilliGPUs = int64(w.TotalGPUs) * topology.MilliPerGPU
	}
	return nil
}

// FractionMilli is a GPU fraction in milli-GPUs, rounded up so that a
// fraction finer than a thousandth is never counted as less than it asks.
func FractionMilli(f float64) int64 {
	return int64(topology.FractionMilli(f))
}

func (g podGPU) describe() string {
	switch {
	case g.Fraction > 0:
		return fmt.Sprintf("%s=%g", AnnotationGPUFraction, g.Fraction)
	case g.MemMiB > 0:
		return fmt.Sprintf("%s=%d", AnnotationGPUMemory, g.MemMiB)
	}
	return "whole devices"
}

// product returns the GPU model a pod template pins: its nodeSelector on
// nvidia.com/gpu.product, else the one value every required node-affinity
// term allows for that label (terms are ORed, so one term with another
// product, or without that label, means several products will do and the
// answer is empty).
func product(spec *corev1.PodSpec) string {
	if p := spec.NodeSelector[topology.DefaultProductLabel]; p != "" {
		return p
	}
	if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil ||
		spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	found := ""
	for _, term := range spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		p := termProduct(term)
		if p == "" || (found != "" && p != found) {
			return ""
		}
		found = p
	}
	return found
}

// termProduct returns the product a node selector term pins with
// "nvidia.com/gpu.product In [one value]", else "".
func termProduct(term corev1.NodeSelectorTerm) string {
	for _, req := range term.MatchExpressions {
		if req.Key == topology.DefaultProductLabel && req.Operator == corev1.NodeSelectorOpIn && len(req.Values) == 1 {
			return req.Values[0]
		}
	}
	return ""
}

// toTyped converts an unstructured value into a typed API object; a shape
// error (a string where a list belongs, a malformed quantity…) is ErrInvalid.
// Integer fields may silently wrap in the converter: read counts with
// intField instead.
func toTyped(u map[string]any, into any, what string) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, into); err != nil {
		return fmt.Errorf("%w: malformed %s: %v", ErrInvalid, what, err)
	}
	return nil
}

// intField reads an optional integer at path in m, checking it is a whole
// number within [lo, hi]. field names it in messages.
func intField(m map[string]any, lo, hi int, field string, path ...string) (int, bool, error) {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return 0, false, nil // a missing or mistyped parent is reported by toTyped
		}
		if v, ok = mm[p]; !ok {
			return 0, false, nil
		}
	}
	allowed := fmt.Sprintf("must be a whole number from %d to %d", lo, hi)
	switch x := v.(type) {
	case nil:
		return 0, false, nil
	case int64:
		if x < int64(lo) || x > int64(hi) {
			return 0, false, invalidField(field, x, allowed)
		}
		return int(x), true, nil
	case float64:
		if x != math.Trunc(x) || x < float64(lo) || x > float64(hi) {
			return 0, false, invalidField(field, x, allowed)
		}
		return int(x), true, nil
	}
	return 0, false, invalidField(field, v, allowed)
}

// mapField returns the object at path, or nil when absent or not an object.
func mapField(m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		next, ok := m[p].(map[string]any)
		if !ok {
			return nil
		}
		m = next
	}
	return m
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
