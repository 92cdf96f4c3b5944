package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/workload"
)

// volcanoDeployment is a server of two 1-GPU replicas in llm, a tenant on
// Volcano, at a tier the tenant may use. Recreate, so a rollout completes
// without a kubelet (no pod ever becomes ready).
const volcanoDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: llm-serve, namespace: llm}
spec:
  replicas: 2
  strategy: {type: Recreate}
  selector:
    matchLabels: {app: llm-serve}
  template:
    metadata:
      labels: {app: llm-serve}
    spec:
      priorityClassName: train
      containers:
      - name: server
        image: vllm/vllm-openai:v1
        resources: {limits: {nvidia.com/gpu: 1}}
`

// TestVolcanoDeploymentHasOnePodGroup: a Deployment of a Volcano tenant,
// admitted by mandate serve, its pods made by kube-controller-manager's
// Deployment and ReplicaSet controllers, leaves exactly one PodGroup (the
// real Volcano CRD's) — the Deployment's, which its pods name — and no
// empty group of its ReplicaSet. After a rollout (a template change, a new
// ReplicaSet) there is still that one group, owned by the live Deployment,
// and the new ReplicaSet's pods name it.
func TestVolcanoDeploymentHasOnePodGroup(t *testing.T) {
	s := start(t)
	s.populate(t)
	envtest.StartControllers(t, s.env, "", "deployment-controller", "replicaset-controller", "garbage-collector-controller")
	ctx := context.Background()
	c := s.env.Client
	if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "llm"}})); err != nil {
		t.Fatal(err)
	}
	dep := object(t, volcanoDeployment)
	if err := c.Create(ctx, dep); err != nil {
		t.Fatalf("create Deployment: %v", err)
	}
	w, err := workload.Normalize(dep)
	if err != nil {
		t.Fatal(err)
	}
	group := scheduler.PodGroupName(w)

	barriers := 0
	assertOneGroup := func(when string) {
		t.Helper()
		pods := s.waitDeploymentPods(t, dep, 2)
		for _, p := range pods {
			if got := p.Annotations[scheduler.AnnotationGroupName]; got != group {
				t.Errorf("%s: pod %s names PodGroup %q, want the Deployment's %s", when, p.Name, got, group)
			}
		}
		// The group is made by the gang controller, which retries a failed
		// attempt later (on a busy machine its caches may not have synced
		// yet): wait for it before the barrier.
		envtest.WaitFor(t, 2*time.Minute, "the Deployment's PodGroup "+group, func() bool {
			return slices.ContainsFunc(s.podGroups(t, "llm"), func(pg unstructured.Unstructured) bool { return pg.GetName() == group })
		})
		// The gang controller handles pods in the order it sees them: once
		// it has made the group of a pod created after these, it has
		// handled these too (and made any other group they would get).
		barriers++
		s.podGroupBarrier(t, fmt.Sprintf("barrier-%d", barriers))
		groups := s.podGroups(t, "llm")
		var names []string
		for _, pg := range groups {
			names = append(names, pg.GetName())
		}
		if len(groups) != 1 || names[0] != group {
			t.Fatalf("%s: PodGroups in llm %v, want exactly the Deployment's %s", when, names, group)
		}
		owners := groups[0].GetOwnerReferences()
		if len(owners) != 1 || owners[0].Kind != "Deployment" || owners[0].UID != dep.GetUID() {
			t.Fatalf("%s: PodGroup %s owners %v, want the Deployment", when, group, owners)
		}
		t.Logf("%s: one PodGroup %s, spec %v", when, group, groups[0].Object["spec"])
	}
	assertOneGroup("after create")

	// A rollout: a new template, so a new ReplicaSet.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
			return err
		}
		containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
		containers[0].(map[string]any)["image"] = "vllm/vllm-openai:v2"
		if err := unstructured.SetNestedSlice(dep.Object, containers, "spec", "template", "spec", "containers"); err != nil {
			return err
		}
		return c.Update(ctx, dep)
	})
	if err != nil {
		t.Fatalf("roll the Deployment out: %v", err)
	}
	var sets appsv1.ReplicaSetList
	envtest.WaitFor(t, 2*time.Minute, "the rollout's second ReplicaSet", func() bool {
		return c.List(ctx, &sets, client.InNamespace("llm"), client.MatchingLabels{"app": "llm-serve"}) == nil && len(sets.Items) == 2
	})
	assertOneGroup("after a rollout")
}

// waitDeploymentPods waits for dep's current ReplicaSet (the one of its
// latest revision) to have n pods, and no other ReplicaSet any, and
// returns them.
func (s *suite) waitDeploymentPods(t *testing.T, dep *unstructured.Unstructured, n int) []corev1.Pod {
	t.Helper()
	ctx := context.Background()
	var pods []corev1.Pod
	envtest.WaitFor(t, 2*time.Minute, fmt.Sprintf("Deployment %s's current ReplicaSet to have its %d pods", dep.GetName(), n), func() bool {
		live := &appsv1.Deployment{}
		if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(dep), live); err != nil {
			return false
		}
		var sets appsv1.ReplicaSetList
		if err := s.env.Client.List(ctx, &sets, client.InNamespace(dep.GetNamespace())); err != nil {
			return false
		}
		current := ""
		for _, rs := range sets.Items {
			if metav1.IsControlledBy(&rs, live) && rs.Annotations["deployment.kubernetes.io/revision"] == live.Annotations["deployment.kubernetes.io/revision"] {
				current = string(rs.UID)
			}
		}
		var list corev1.PodList
		if current == "" || s.env.Client.List(ctx, &list, client.InNamespace(dep.GetNamespace()), client.MatchingLabels{"app": dep.GetName()}) != nil {
			return false
		}
		pods = list.Items
		return len(pods) == n && !slices.ContainsFunc(pods, func(p corev1.Pod) bool {
			ref := metav1.GetControllerOfNoCopy(&p)
			return ref == nil || string(ref.UID) != current
		})
	})
	return pods
}

// podGroupBarrier creates a bare 1-GPU pod name in llm, waits for the gang
// controller to make its PodGroup, and deletes the pod and the group.
func (s *suite) podGroupBarrier(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	pod := object(t, `
apiVersion: v1
kind: Pod
metadata: {namespace: llm}
spec:
  containers:
  - name: main
    image: ubuntu
    resources: {limits: {nvidia.com/gpu: 1}}
`)
	pod.SetName(name)
	if err := s.env.Client.Create(ctx, pod); err != nil {
		t.Fatalf("create barrier pod %s: %v", name, err)
	}
	w, err := workload.Normalize(pod)
	if err != nil {
		t.Fatal(err)
	}
	pg := &unstructured.Unstructured{}
	pg.SetAPIVersion(scheduler.PodGroupAPIVersion)
	pg.SetKind(scheduler.PodGroupKind)
	key := client.ObjectKey{Namespace: "llm", Name: scheduler.PodGroupName(w)}
	envtest.WaitFor(t, 30*time.Second, "the barrier pod's PodGroup", func() bool {
		return s.env.Client.Get(ctx, key, pg) == nil
	})
	for _, obj := range []client.Object{pod, pg} {
		if err := s.env.Client.Delete(ctx, obj, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete barrier %s %s: %v", obj.GetObjectKind().GroupVersionKind().Kind, name, err)
		}
	}
	envtest.WaitFor(t, 30*time.Second, "the barrier pod and its PodGroup to be gone", func() bool {
		return apierrors.IsNotFound(s.env.Client.Get(ctx, key, pg)) &&
			apierrors.IsNotFound(s.env.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}))
	})
}

// podGroups lists the Volcano PodGroups in namespace ns.
func (s *suite) podGroups(t *testing.T, ns string) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(scheduler.PodGroupAPIVersion)
	list.SetKind(scheduler.PodGroupKind + "List")
	if err := s.env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatalf("list PodGroups in %s: %v", ns, err)
	}
	return list.Items
}
