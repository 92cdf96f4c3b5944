package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// loadPriorities turns the authority model's priority classes (its tiers
// and their borrowed classes, as mandate sync renders them) into the
// PriorityClasses the API server needs before pods may name them.
func loadPriorities(path string) ([]*schedulingv1.PriorityClass, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the authority model: %w", err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m, err := model.Decode(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := fixtures.PriorityClassesOf(m)
	sort.Slice(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	return out, nil
}

type loadCounts struct{ priorityClasses, namespaces, nodes, pods int }

func (c loadCounts) String() string {
	return fmt.Sprintf("%d PriorityClasses, %d namespaces, %d nodes, %d running pods",
		c.priorityClasses, c.namespaces, c.nodes, c.pods)
}

// loadCluster creates the snapshot's objects as kubectl would, then sets
// the status of pods (Running), which create ignores; nodes are registered
// as their kubelets would (fixtures.CreateNode: allocatable, Ready, the
// not-ready taint lifted). Pods are bound to their nodes by spec.nodeName.
func loadCluster(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, priorities []*schedulingv1.PriorityClass) (loadCounts, error) {
	var n loadCounts
	for _, pc := range priorities {
		if err := c.Create(ctx, pc); err != nil {
			return n, fmt.Errorf("PriorityClass %s: %w", pc.Name, err)
		}
		n.priorityClasses++
	}
	probe := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probeNamespace}}
	if err := c.Create(ctx, probe); err != nil {
		return n, fmt.Errorf("namespace %s: %w", probeNamespace, err)
	}
	// Namespaces first, then nodes, then the pods that need both.
	order := map[string]int{"Namespace": 0, "Node": 1, "Pod": 2}
	sorted := append([]*unstructured.Unstructured(nil), objs...)
	sort.SliceStable(sorted, func(i, j int) bool { return order[sorted[i].GetKind()] < order[sorted[j].GetKind()] })
	for _, obj := range sorted {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		kind := obj.GetKind()
		if kind == "Node" {
			node := &corev1.Node{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, node); err != nil {
				return n, fmt.Errorf("Node %s: %w", name(obj), err)
			}
			if err := fixtures.CreateNode(ctx, c, node); err != nil {
				return n, err
			}
			n.nodes++
			continue
		}
		status, hasStatus := obj.Object["status"]
		created := obj.DeepCopy()
		delete(created.Object, "status")
		if err := c.Create(ctx, created); err != nil {
			return n, fmt.Errorf("%s %s: %w", kind, name(obj), err)
		}
		if hasStatus && kind == "Pod" {
			created.Object["status"] = status
			if err := c.Status().Update(ctx, created); err != nil {
				return n, fmt.Errorf("status of %s %s: %w", kind, name(obj), err)
			}
		}
		switch kind {
		case "Namespace":
			n.namespaces++
		case "Pod":
			n.pods++
		}
	}
	return n, nil
}

func name(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}

// writeKubeconfig writes a kubeconfig for an admin user (system:masters),
// the one `mandate serve` uses.
func writeKubeconfig(env *envtest.Env, dir string) (string, error) {
	user, err := env.Environment.AddUser(crenvtest.User{Name: "mandate-demo-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("unable to provision an admin user: %w", err)
	}
	raw, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("unable to render the admin kubeconfig: %w", err)
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, raw, 0o600)
}
