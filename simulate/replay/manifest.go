package replay

import (
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// manifest is the batch/v1 Job a trace job is submitted as: Pods pods at
// once (parallelism and completions), each asking GPUsPerPod of Resource
// (or KAI's gpu-fraction of one GPU), CPU and memory, the priority class,
// and one product as a node selector; the elastic minimum and the
// required topology level as Mandate's annotations.
func manifest(j Job, namespace string, uid int) *unstructured.Unstructured {
	resource := j.Resource
	if resource == "" {
		resource = topology.DefaultGPUResource
	}
	limits := map[string]any{}
	requests := map[string]any{}
	tmplAnn := map[string]any{}
	switch {
	case j.GPUsPerPod == 1 && j.GPUMilli > 0 && j.GPUMilli < topology.MilliPerGPU:
		tmplAnn[workload.AnnotationGPUFraction] = strconv.FormatFloat(float64(j.GPUMilli)/topology.MilliPerGPU, 'f', -1, 64)
	case j.GPUsPerPod > 0:
		limits[resource] = int64(j.GPUsPerPod)
	}
	if j.CPUMilli > 0 {
		requests["cpu"] = strconv.FormatInt(j.CPUMilli, 10) + "m"
	}
	if j.MemoryMiB > 0 {
		requests["memory"] = strconv.FormatInt(j.MemoryMiB, 10) + "Mi"
	}
	container := map[string]any{"name": "main", "image": "simulated", "resources": map[string]any{"limits": limits, "requests": requests}}
	podSpec := map[string]any{"containers": []any{container}, "restartPolicy": "Never"}
	if j.PriorityClass != "" {
		podSpec["priorityClassName"] = j.PriorityClass
	}
	if len(j.Products) == 1 {
		podSpec["nodeSelector"] = map[string]any{topology.DefaultProductLabel: j.Products[0]}
	}
	tmplMeta := map[string]any{}
	if len(tmplAnn) > 0 {
		tmplMeta["annotations"] = tmplAnn
	}
	meta := map[string]any{"name": j.Name, "namespace": namespace, "uid": "sim-" + strconv.Itoa(uid), "generation": int64(1)}
	ann := map[string]any{}
	if j.MinPods > 0 && j.MinPods < j.Pods {
		ann[workload.AnnotationMinAvailable] = strconv.Itoa(j.MinPods)
	}
	if j.Topology != "" {
		ann[workload.AnnotationTopologyRequired] = j.Topology
	}
	if len(ann) > 0 {
		meta["annotations"] = ann
	}
	if j.Class != "" {
		meta["labels"] = map[string]any{workload.LabelClass: j.Class}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1",
		"kind":       "Job",
		"metadata":   meta,
		"spec": map[string]any{
			"parallelism": int64(j.Pods),
			"completions": int64(j.Pods),
			"template":    map[string]any{"metadata": tmplMeta, "spec": podSpec},
		},
	}}
	return obj
}

// uidOf is the simulated UID of the job numbered uid.
func uidOf(uid int) types.UID { return types.UID("sim-" + strconv.Itoa(uid)) }
