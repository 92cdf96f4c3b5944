package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// readModel reads the authority model's data.json as a generic document.
func readModel(path string) (map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("unable to read the authority model: %w", err)
	}
	var model map[string]any
	if err := json.Unmarshal(raw, &model); err != nil {
		return nil, fmt.Errorf("unable to parse the authority model %s: %w", path, err)
	}
	return model, nil
}

// independentTrees is model with every tenant its own root: no parents,
// each tenant keeping what it inherited (priority classes, scheduler) from
// its nearest ancestor, so the same workloads get the same verdicts with
// one quota tree (and one lock) per tenant.
func independentTrees(model map[string]any) (map[string]any, error) {
	out, err := deepCopy(model)
	if err != nil {
		return nil, err
	}
	tenants, _ := out["tenants"].(map[string]any)
	orig, _ := model["tenants"].(map[string]any)
	if len(tenants) == 0 {
		return nil, fmt.Errorf("the model has no tenants")
	}
	inherited := func(name, key string) any {
		for seen := 0; name != "" && seen <= len(orig); seen++ {
			t, _ := orig[name].(map[string]any)
			if v, ok := t[key]; ok {
				return v
			}
			name, _ = t["parent"].(string)
		}
		return nil
	}
	for name, v := range tenants {
		t := v.(map[string]any)
		for _, key := range []string{"priorityClasses", "scheduler"} {
			if _, ok := t[key]; !ok {
				if iv := inherited(name, key); iv != nil {
					t[key] = iv
				}
			}
		}
		t["parent"] = ""
	}
	return out, nil
}

func deepCopy(m map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(raw, &out)
}

// opaData is the cluster facts the pure-Rego peer decides over:
//
//	bench.model       the authority model
//	bench.namespaces  namespace → tenant (the mandate.dev/tenant label)
//	bench.parents     tenant → [parent] (graph.reachable walks to the root)
//	bench.usage       tenant → GPU resource → GPUs of its running pods
//	bench.capacity    level → domain → [[allocatable, product], …] per node
//	reference.domains level → domain → [[free, product], …] per node
//
// the last in the layout evaluator/testdata/reference.rego reads.
func opaData(model map[string]any, cluster []*unstructured.Unstructured) (map[string]any, error) {
	var nodes []corev1.Node
	var pods []corev1.Pod
	namespaces := map[string]any{}
	for _, obj := range cluster {
		switch obj.GetKind() {
		case "Node":
			var n corev1.Node
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &n); err != nil {
				return nil, fmt.Errorf("node %s: %w", obj.GetName(), err)
			}
			nodes = append(nodes, n)
		case "Pod":
			var p corev1.Pod
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &p); err != nil {
				return nil, fmt.Errorf("pod %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
			}
			pods = append(pods, p)
		case "Namespace":
			if t := obj.GetLabels()[workload.LabelTenant]; t != "" {
				namespaces[obj.GetName()] = t
			}
		}
	}
	tenants, _ := model["tenants"].(map[string]any)
	parents := map[string]any{}
	for name, v := range tenants {
		p, _ := v.(map[string]any)["parent"].(string)
		if p == "" {
			parents[name] = []any{}
		} else {
			parents[name] = []any{p}
		}
	}
	usage := map[string]map[string]any{}
	used := map[string]int{} // node → nvidia.com/gpu in use
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			continue
		}
		req := topology.PodGPURequests(p)
		used[p.Spec.NodeName] += req[topology.DefaultGPUResource]
		tenant, _ := namespaces[p.Namespace].(string)
		if tenant == "" {
			continue
		}
		for r, n := range req {
			if usage[tenant] == nil {
				usage[tenant] = map[string]any{}
			}
			prev, _ := usage[tenant][r].(int)
			usage[tenant][r] = prev + n
		}
	}
	levels, err := topologyLevels(model)
	if err != nil {
		return nil, err
	}
	capacity, free := map[string]any{}, map[string]any{}
	for _, n := range nodes {
		alloc := n.Status.Allocatable[corev1.ResourceName(topology.DefaultGPUResource)]
		total := int(alloc.Value())
		if total == 0 {
			continue
		}
		product := n.Labels[topology.DefaultProductLabel]
		var key []string
		for _, l := range levels {
			key = append(key, n.Labels[l.label])
			k := strings.Join(key, "/")
			addNode(capacity, l.name, k, total, product)
			addNode(free, l.name, k, total-used[n.Name], product)
		}
	}
	return map[string]any{
		"bench": map[string]any{
			"model": model, "namespaces": namespaces, "parents": parents,
			"usage": usage, "capacity": capacity,
		},
		"reference": map[string]any{"domains": free},
	}, nil
}

type level struct{ name, label string }

func topologyLevels(model map[string]any) ([]level, error) {
	topo, _ := model["topology"].(map[string]any)
	raw, _ := topo["levels"].([]any)
	var out []level
	for _, v := range raw {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		label, _ := m["nodeLabel"].(string)
		if name == "" || label == "" {
			return nil, fmt.Errorf("a topology level without name or nodeLabel: %v", v)
		}
		out = append(out, level{name, label})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the model has no topology levels")
	}
	return out, nil
}

func addNode(byLevel map[string]any, level, key string, gpus int, product string) {
	domains, _ := byLevel[level].(map[string]any)
	if domains == nil {
		domains = map[string]any{}
		byLevel[level] = domains
	}
	list, _ := domains[key].([]any)
	domains[key] = append(list, []any{gpus, product})
}
