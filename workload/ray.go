package workload

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RayClusterGVK and RayJobGVK are KubeRay's (github.com/ray-project/kuberay/ray-operator v1.4).
var (
	RayClusterGVK = schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayCluster"}
	RayJobGVK     = schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayJob"}
)

func init() {
	Register(Kind{GVK: RayClusterGVK, Resource: "rayclusters", Label: "RayCluster", GangOwner: true, Normalise: normaliseRayCluster, Suspend: []string{"spec", "suspend"},
		Shape: Shape{Fields: rayClusterShape}})
	// A RayJob's jobDeploymentStatus ends Complete or Failed.
	Register(Kind{GVK: RayJobGVK, Resource: "rayjobs", Label: "RayJob", GangOwner: true, Normalise: normaliseRayJob, Suspend: []string{"spec", "suspend"},
		Shape:    Shape{Fields: append([]string{"rayClusterSpec"}, rayClusterShape...)},
		Finished: Finished{PhasePath: []string{"status", "jobDeploymentStatus"}, Phases: []string{"Complete", "Failed"}}})
}

// rayClusterShape are the fields of a Ray cluster's spec that hold its
// gang: the head group and the worker groups, their names and hosts.
var rayClusterShape = []string{"headGroupSpec", "workerGroupSpecs", "groupName", "numOfHosts"}

// normaliseRayCluster: see rayClusterSets. The class is training.
func normaliseRayCluster(obj *unstructured.Unstructured) (Workload, error) {
	return rayWorkload(mapField(obj.Object, "spec"), "/spec", "spec")
}

// normaliseRayJob: the cluster of spec.rayClusterSpec (see
// rayClusterSets); the submitter Job KubeRay creates is a child that gets
// the RayJob's directives, not a member of the gang. A RayJob without
// rayClusterSpec runs on an existing RayCluster (spec.clusterSelector),
// which was decided itself: it is one pod (the submitter) without GPUs.
// The class is training.
func normaliseRayJob(obj *unstructured.Unstructured) (Workload, error) {
	spec := mapField(obj.Object, "spec", "rayClusterSpec")
	if spec != nil {
		return rayWorkload(spec, "/spec/rayClusterSpec", "spec.rayClusterSpec")
	}
	submitter := podSet{
		Name: "submitter", Replicas: 1, Pointer: NoTemplate, Field: "spec.submitterPodTemplate",
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-job-submitter"}}}},
	}
	if raw := mapField(obj.Object, "spec", "submitterPodTemplate"); raw != nil {
		if err := toTyped(raw, &submitter.Template, submitter.Field); err != nil {
			return Workload{}, err
		}
		submitter.Pointer = "/spec/submitterPodTemplate"
	}
	w := Workload{Class: ClassTraining}
	if err := fromPodSets(&w, []podSet{submitter}); err != nil {
		return Workload{}, err
	}
	return w, nil
}

// rayWorkload reads a RayClusterSpec at pointer/field: a "head" role of one
// pod (headGroupSpec.template) and one role per worker group (its
// groupName) of replicas × numOfHosts pods. Demand — the pods counted
// against quota and in the gang — is each group's replicas (default
// minReplicas), clamped to [minReplicas, maxReplicas] as KubeRay does; the
// gang minimum is the head plus each group's minReplicas × numOfHosts.
// maxReplicas is not counted at admission: pods the autoscaler adds beyond
// the admitted replicas are decided one by one when created.
func rayWorkload(spec map[string]any, pointer, field string) (Workload, error) {
	if spec == nil {
		return Workload{}, missingField(field, "a Ray cluster has a headGroupSpec")
	}
	var head corev1.PodTemplateSpec
	headRaw := mapField(spec, "headGroupSpec", "template")
	if headRaw == nil {
		return Workload{}, missingField(field+".headGroupSpec.template", "a Ray cluster has a head pod template")
	}
	if err := toTyped(headRaw, &head, field+".headGroupSpec.template"); err != nil {
		return Workload{}, err
	}
	sets := []podSet{{
		Name: "head", Replicas: 1,
		Pointer: pointer + "/headGroupSpec/template", Field: field + ".headGroupSpec.template",
		Template: head,
	}}
	minPods := 1
	groups, _ := spec["workerGroupSpecs"].([]any)
	for i, raw := range groups {
		g, ok := raw.(map[string]any)
		gfield := fmt.Sprintf("%s.workerGroupSpecs[%d]", field, i)
		if !ok {
			return Workload{}, invalidf("%s is %s: must be an object", gfield, jsonType(raw))
		}
		lo, _, err := intField(g, 0, MaxPods, gfield+".minReplicas", "minReplicas")
		if err != nil {
			return Workload{}, err
		}
		hi, found, err := intField(g, 0, 1<<31-1, gfield+".maxReplicas", "maxReplicas")
		if err != nil {
			return Workload{}, err
		}
		if !found {
			hi = 1<<31 - 1
		}
		replicas, found, err := intField(g, 0, MaxPods, gfield+".replicas", "replicas")
		if err != nil {
			return Workload{}, err
		}
		if !found {
			replicas = lo
		}
		replicas = max(min(replicas, hi), lo)
		hosts, found, err := intField(g, 1, MaxPods, gfield+".numOfHosts", "numOfHosts")
		if err != nil {
			return Workload{}, err
		}
		if !found {
			hosts = 1
		}
		if replicas*hosts > MaxPods || lo*hosts > MaxPods {
			return Workload{}, invalidField("the total replica count of "+gfield, replicas*hosts, fmt.Sprintf("must be at most %d pods", MaxPods))
		}
		var tmpl corev1.PodTemplateSpec
		if err := toTyped(mapField(g, "template"), &tmpl, gfield+".template"); err != nil {
			return Workload{}, err
		}
		name, _ := g["groupName"].(string)
		if name == "" {
			name = fmt.Sprintf("workers%d", i)
		}
		minPods += lo * hosts
		sets = append(sets, podSet{
			Name: name, Replicas: replicas * hosts,
			Pointer:  fmt.Sprintf("%s/workerGroupSpecs/%d/template", pointer, i),
			Field:    gfield + ".template",
			Template: tmpl,
		})
	}
	w := Workload{Class: ClassTraining}
	if err := fromPodSets(&w, sets); err != nil {
		return Workload{}, err
	}
	if minPods < w.Pods {
		w.MinPods = minPods
	}
	return w, nil
}
