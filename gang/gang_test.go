package gang

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mconfig "github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/workload"
)

const (
	ns      = "default"
	timeout = 30 * time.Second
	tick    = 100 * time.Millisecond
)

// volcanoDirectives are what the authority model decides for a 4-pod
// training gang confined to one block (tier 2).
var volcanoDirectives = evaluator.Directives{
	Scheduler:     scheduler.Volcano,
	Queue:         "research",
	PriorityClass: "train",
	GangMin:       4,
	RequiredLevel: "block",
	RequiredTier:  2,
}

// TestGang runs the controllers in a manager against a real API server with
// the upstream Volcano CRDs (so every PodGroup written passes the real
// schema) and kube-controller-manager's garbage collector.
func TestGang(t *testing.T) {
	env := envtest.Start(t, envtest.WithPyTorchJobCRD())
	envtest.StartGarbageCollector(t, env)
	mgr := startManager(t, env)
	c := env.Client
	ctx := context.Background()
	require.NoError(t, c.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "train"}, Value: 50}))

	t.Run("admitted Job gets its PodGroup, collected with the Job", func(t *testing.T) {
		job := admitted(t, jobObject("train-llm", 4, 8), volcanoDirectives)
		require.NoError(t, c.Create(ctx, job))
		pg := waitPodGroup(t, c, "mandate-job-train-llm")

		assert.Equal(t, map[string]any{
			"minMember":         int64(4),
			"queue":             "research",
			"priorityClassName": "train",
			"minResources":      map[string]any{"nvidia.com/gpu": "32"},
			"networkTopology":   map[string]any{"mode": "hard", "highestTierAllowed": int64(2)},
		}, pg.Object["spec"])
		assert.Equal(t, "mandate", pg.GetLabels()[mconfig.LabelManagedBy])
		assert.Equal(t, []metav1.OwnerReference{{
			APIVersion: "batch/v1", Kind: "Job", Name: "train-llm", UID: job.GetUID(),
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}}, pg.GetOwnerReferences())

		// The pods the webhook points at the group are those it names.
		group, _, _ := unstructured.NestedString(job.Object, "spec", "template", "metadata", "annotations", scheduler.AnnotationGroupName)
		assert.Equal(t, pg.GetName(), group)

		require.NoError(t, c.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)))
		require.Eventually(t, func() bool {
			err := c.Get(ctx, client.ObjectKeyFromObject(pg), podGroup())
			return apierrors.IsNotFound(err)
		}, timeout, tick, "PodGroup not garbage-collected after its Job was deleted")
	})

	t.Run("reconciling again changes nothing", func(t *testing.T) {
		job := admitted(t, jobObject("steady", 4, 8), volcanoDirectives)
		require.NoError(t, c.Create(ctx, job))
		pg := waitPodGroup(t, c, "mandate-job-steady")
		r := &reconciler{client: mgr.GetClient(), reader: mgr.GetAPIReader(), gvk: workload.JobGVK}
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "steady"}}
		for range 2 {
			_, err := r.Reconcile(ctx, req)
			require.NoError(t, err)
		}
		again := podGroup()
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pg), again))
		assert.Equal(t, pg.GetResourceVersion(), again.GetResourceVersion(), "PodGroup written again")
	})

	t.Run("drift is repaired", func(t *testing.T) {
		job := admitted(t, jobObject("drift", 4, 8), volcanoDirectives)
		require.NoError(t, c.Create(ctx, job))
		pg := waitPodGroup(t, c, "mandate-job-drift")
		require.NoError(t, unstructured.SetNestedField(pg.Object, int64(1), "spec", "minMember"))
		require.NoError(t, unstructured.SetNestedField(pg.Object, "other", "spec", "queue"))
		require.NoError(t, c.Update(ctx, pg))
		require.Eventually(t, func() bool {
			got := podGroup()
			if err := c.Get(ctx, client.ObjectKeyFromObject(pg), got); err != nil {
				return false
			}
			minMember, _, _ := unstructured.NestedInt64(got.Object, "spec", "minMember")
			queue, _, _ := unstructured.NestedString(got.Object, "spec", "queue")
			return minMember == 4 && queue == "research"
		}, timeout, tick, "edited PodGroup not restored")
	})

	t.Run("PyTorchJob gets its PodGroup", func(t *testing.T) {
		d := volcanoDirectives
		d.RequiredLevel, d.RequiredTier, d.PreferredLevel, d.PreferredTier = "", 0, "rack", 1
		pj := admitted(t, pyTorchJobObject("llama"), d)
		require.NoError(t, c.Create(ctx, pj))
		pg := waitPodGroup(t, c, "mandate-pytorchjob-llama")
		spec := pg.Object["spec"].(map[string]any)
		assert.Equal(t, int64(4), spec["minMember"])
		assert.Equal(t, map[string]any{"nvidia.com/gpu": "32"}, spec["minResources"])
		assert.Equal(t, map[string]any{"mode": "soft", "highestTierAllowed": int64(1)}, spec["networkTopology"])
		require.Len(t, pg.GetOwnerReferences(), 1)
		assert.Equal(t, "PyTorchJob", pg.GetOwnerReferences()[0].Kind)
		assert.Equal(t, pj.GetUID(), pg.GetOwnerReferences()[0].UID)
	})

	t.Run("bare Pod is a gang of one", func(t *testing.T) {
		require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx, &corev1.ServiceAccount{
			ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns},
		})))
		d := volcanoDirectives
		d.GangMin = 0
		pod := admitted(t, podObject("notebook"), d)
		require.NoError(t, c.Create(ctx, pod))
		pg := waitPodGroup(t, c, "mandate-pod-notebook")
		minMember, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
		assert.Equal(t, int64(1), minMember)
		assert.Equal(t, "Pod", pg.GetOwnerReferences()[0].Kind)
	})

	t.Run("ReplicaSet's pods share the group they are pointed at", func(t *testing.T) {
		require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx, &corev1.ServiceAccount{
			ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns},
		})))
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: "serve-7d9f", Namespace: ns},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptr.To(int32(0)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "serve"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "serve"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "serve", Image: "nvcr.io/nvidia/tritonserver:25.01-py3"}}},
				},
			},
		}
		require.NoError(t, c.Create(ctx, rs))
		d := volcanoDirectives
		d.GangMin = 1
		var groups []string
		for range 2 {
			// As the ReplicaSet controller makes them: generateName, owned.
			pod := podObject("")
			pod.SetName("")
			pod.SetGenerateName("serve-7d9f-")
			pod.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet",
				Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}})
			pod = admitted(t, pod, d)
			group, _, _ := unstructured.NestedString(pod.Object, "metadata", "annotations", scheduler.AnnotationGroupName)
			groups = append(groups, group)
			require.NoError(t, c.Create(ctx, pod))
		}
		require.Equal(t, []string{"mandate-replicaset-serve-7d9f", "mandate-replicaset-serve-7d9f"}, groups)
		pg := waitPodGroup(t, c, groups[0])
		minMember, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
		assert.Equal(t, int64(1), minMember, "each replica is a gang of one")
		assert.Equal(t, []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true),
		}}, pg.GetOwnerReferences(), "the group goes with the ReplicaSet, not with one pod")
	})

	noPodGroup := []struct {
		name string
		obj  func(t *testing.T) *unstructured.Unstructured
	}{
		{"Job without directives", func(*testing.T) *unstructured.Unstructured { return jobObject("plain", 4, 8) }},
		{"KAI-scheduled Job", func(t *testing.T) *unstructured.Unstructured {
			d := volcanoDirectives
			d.Scheduler = scheduler.KAI
			return admitted(t, jobObject("kai", 4, 8), d)
		}},
		{"default-scheduled Job", func(t *testing.T) *unstructured.Unstructured {
			d := volcanoDirectives
			d.Scheduler = scheduler.Default
			return admitted(t, jobObject("default", 4, 8), d)
		}},
	}
	for _, tc := range noPodGroup {
		t.Run(tc.name+" gets no PodGroup", func(t *testing.T) {
			obj := tc.obj(t)
			require.NoError(t, c.Create(ctx, obj))
			// Reconcile it directly once the cache has it, so the
			// assertion does not race the manager.
			require.Eventually(t, func() bool {
				return mgr.GetCache().Get(ctx, client.ObjectKeyFromObject(obj), metadataOf(workload.JobGVK)) == nil
			}, timeout, tick)
			r := &reconciler{client: mgr.GetClient(), reader: mgr.GetAPIReader(), gvk: workload.JobGVK}
			_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			require.NoError(t, err)
			err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mandate-job-" + obj.GetName()}, podGroup())
			assert.True(t, apierrors.IsNotFound(err), "Get(PodGroup) error = %v, want NotFound", err)
		})
	}
}

// TestSetupWithoutPyTorchJobCRD checks that a cluster without Kubeflow's CRD
// still gets its Job PodGroups: the PyTorchJob controller is left out rather
// than failing the manager.
func TestSetupWithoutPyTorchJobCRD(t *testing.T) {
	env := envtest.Start(t)
	startManager(t, env)
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, admitted(t, jobObject("solo", 4, 8), volcanoDirectives)))
	waitPodGroup(t, env.Client, "mandate-job-solo")
}

// startManager runs a manager with Setup's controllers until the test ends.
func startManager(t *testing.T, env *envtest.Env) manager.Manager {
	t.Helper()
	mgr, err := ctrl.NewManager(env.Config, manager.Options{
		Scheme:                 env.Scheme,
		Logger:                 testr.New(t),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	require.NoError(t, Setup(mgr))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	require.True(t, mgr.GetCache().WaitForCacheSync(ctx), "manager cache not synced")
	return mgr
}

// admitted is obj as the mutating webhook stores it when the authority
// model decided d: the scheduler adapter's rendering, directives annotation
// included.
func admitted(t *testing.T, obj *unstructured.Unstructured, d evaluator.Directives) *unstructured.Unstructured {
	t.Helper()
	w, err := workload.Normalize(obj)
	require.NoError(t, err)
	adapter, err := scheduler.For(d.Scheduler)
	require.NoError(t, err)
	require.NoError(t, adapter.Apply(obj, w, d))
	require.Contains(t, obj.GetAnnotations(), scheduler.AnnotationDirectives)
	return obj
}

func waitPodGroup(t *testing.T, c client.Client, name string) *unstructured.Unstructured {
	t.Helper()
	pg := podGroup()
	require.Eventually(t, func() bool {
		return c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pg) == nil
	}, timeout, tick, "PodGroup %s not created", name)
	return pg
}

func podGroup() *unstructured.Unstructured {
	pg := &unstructured.Unstructured{}
	pg.SetGroupVersionKind(podGroupGVK)
	return pg
}

func gpuContainer(gpus int) map[string]any {
	return map[string]any{
		"name":      "train",
		"image":     "nvcr.io/nvidia/pytorch:25.01-py3",
		"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": int64(gpus)}},
	}
}

func jobObject(name string, pods, gpus int) *unstructured.Unstructured {
	return fromJSON(map[string]any{
		"apiVersion": "batch/v1",
		"kind":       "Job",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"parallelism": int64(pods),
			"completions": int64(pods),
			"template": map[string]any{
				"spec": map[string]any{
					"restartPolicy": "Never",
					"containers":    []any{gpuContainer(gpus)},
				},
			},
		},
	})
}

func pyTorchJobObject(name string) *unstructured.Unstructured {
	replica := func(n int) map[string]any {
		return map[string]any{
			"replicas":      int64(n),
			"restartPolicy": "OnFailure",
			"template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{
					"name":      "pytorch",
					"image":     "nvcr.io/nvidia/pytorch:25.01-py3",
					"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": int64(8)}},
				}},
			}},
		}
	}
	return fromJSON(map[string]any{
		"apiVersion": "kubeflow.org/v1",
		"kind":       "PyTorchJob",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"pytorchReplicaSpecs": map[string]any{"Master": replica(1), "Worker": replica(3)},
		},
	})
}

func podObject(name string) *unstructured.Unstructured {
	return fromJSON(map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"containers": []any{gpuContainer(1)}},
	})
}

// fromJSON round-trips through JSON so numbers are what the API server
// returns (int64) and the maps are plain.
func fromJSON(obj map[string]any) *unstructured.Unstructured {
	raw, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		panic(err)
	}
	return u
}

// TestPodCandidates: of the pods Mandate admitted for Volcano, the pod
// controller keeps a group only for those that name the group it would
// keep: a bare pod's, a bare ReplicaSet's pods'. A Deployment's pods name
// the Deployment's group (its ReplicaSet is a link, not a gang), so they
// get no ReplicaSet group of their own, and a gang kind's pods none.
func TestPodCandidates(t *testing.T) {
	d := volcanoDirectives
	d.GangMin = 1
	pod := func(owner *metav1.OwnerReference, group string) *unstructured.Unstructured {
		p := admitted(t, podObject("serve-1"), d)
		if owner != nil {
			p.SetOwnerReferences([]metav1.OwnerReference{*owner})
		}
		annotations := p.GetAnnotations()
		annotations[scheduler.AnnotationGroupName] = group
		p.SetAnnotations(annotations)
		return p
	}
	rs := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "serve-7d9f", UID: "u1", Controller: ptr.To(true)}
	job := &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "u2", Controller: ptr.To(true)}
	for _, tc := range []struct {
		name string
		pod  *unstructured.Unstructured
		want bool
	}{
		{"bare pod", pod(nil, "mandate-pod-serve-1"), true},
		{"bare ReplicaSet's pod", pod(rs, "mandate-replicaset-serve-7d9f"), true},
		{"Deployment's pod", pod(rs, "mandate-deployment-serve"), false},
		{"Job's pod", pod(job, "mandate-job-train"), false},
		{"pod without directives", podObject("plain"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, isCandidate(podGVK, tc.pod))
		})
	}
}
