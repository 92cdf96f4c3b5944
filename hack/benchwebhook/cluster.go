package main

import (
	"context"
	"errors"
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

	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// loadCluster creates the example cluster in the API server as hack/demo
// does: the model's PriorityClasses, then namespaces, nodes (registered as
// their kubelets would, fixtures.CreateNode) and the running pods with
// their status.
func loadCluster(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, model map[string]any) error {
	priorities, _ := model["priorities"].(map[string]any)
	for name, v := range priorities {
		p, _ := v.(map[string]any)
		value, _ := p["value"].(float64)
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: int32(value)}
		if err := c.Create(ctx, pc); err != nil {
			return fmt.Errorf("unable to create PriorityClass %s: %w", name, err)
		}
	}
	order := map[string]int{"Namespace": 0, "Node": 1, "Pod": 2}
	sorted := append([]*unstructured.Unstructured(nil), objs...)
	sort.SliceStable(sorted, func(i, j int) bool { return order[sorted[i].GetKind()] < order[sorted[j].GetKind()] })
	for _, obj := range sorted {
		if err := ctx.Err(); err != nil {
			return err
		}
		kind := obj.GetKind()
		if kind == "Node" {
			node := &corev1.Node{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, node); err != nil {
				return fmt.Errorf("node %s: %w", obj.GetName(), err)
			}
			if err := fixtures.CreateNode(ctx, c, node); err != nil {
				return err
			}
			continue
		}
		status, hasStatus := obj.Object["status"]
		created := obj.DeepCopy()
		delete(created.Object, "status")
		if err := c.Create(ctx, created); err != nil {
			return fmt.Errorf("unable to create %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
		}
		if hasStatus && kind == "Pod" {
			created.Object["status"] = status
			if err := c.Status().Update(ctx, created); err != nil {
				return fmt.Errorf("unable to set the status of pod %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
			}
		}
	}
	return nil
}

// ensureNamespace creates a namespace without labels.
func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		return fmt.Errorf("unable to create namespace %s: %w", name, err)
	}
	return nil
}

// adminKubeconfig writes a kubeconfig for a system:masters user.
func adminKubeconfig(env *envtest.Env, dir, user string) (string, error) {
	u, err := env.Environment.AddUser(crenvtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("unable to provision user %s: %w", user, err)
	}
	raw, err := u.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("unable to render the kubeconfig of %s: %w", user, err)
	}
	path := filepath.Join(dir, user+".kubeconfig")
	return path, os.WriteFile(path, raw, 0o600)
}

// launchNamespacesOnly starts a second API server (with the CRDs of
// crdPaths) holding only the example cluster's namespaces and Gatekeeper's,
// for a Gatekeeper that must not see the first one's constraints; it
// returns the server, an admin kubeconfig for it (written into dir) and
// what stops it.
func launchNamespacesOnly(ctx context.Context, objs []*unstructured.Unstructured, crdPaths, dir string) (*envtest.Env, string, func() error, error) {
	logf("starting a second kube-apiserver and etcd (namespaces only)")
	env, stop, err := envtest.Launch(envtest.WithCRDPaths(crdPaths))
	if err != nil {
		return nil, "", nil, fmt.Errorf("the second API server: %w", err)
	}
	fail := func(err error) (*envtest.Env, string, func() error, error) {
		return nil, "", nil, errors.Join(err, stop())
	}
	for _, obj := range objs {
		if obj.GetKind() != "Namespace" {
			continue
		}
		ns := obj.DeepCopy()
		delete(ns.Object, "status")
		if err := env.Client.Create(ctx, ns); err != nil {
			return fail(fmt.Errorf("unable to create namespace %s in the second API server: %w", ns.GetName(), err))
		}
	}
	if err := ensureNamespace(ctx, env.Client, gatekeeperNamespace); err != nil {
		return fail(err)
	}
	kubeconfig, err := adminKubeconfig(env, dir, "bench-admin-namespaces-only")
	if err != nil {
		return fail(err)
	}
	return env, kubeconfig, stop, nil
}
