package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/workload"
)

// kindsNamespace is the namespace of tenant product (KAI, ceiling 160
// nvidia.com/gpu) the kinds are created in.
const kindsNamespace = "product"

// TestUpstreamKindsThroughTheWebhook: each kind of issue 11, from its
// upstream project's own example (workload/testdata) and with its
// upstream CRD installed, is decided by the webhook as a gang: admitted
// with the directives of the tenant's scheduler rendered into its pod
// templates, and its whole GPU demand reserved. The objects its
// controller would create (a JobSet's Jobs, a TrainJob's JobSet, a
// LeaderWorkerSet's StatefulSets, and their pods, each with a controller
// reference) get the gang's directives, naming the gang, and count nothing
// more.
func TestUpstreamKindsThroughTheWebhook(t *testing.T) {
	s := startWith(t, startOptions{
		env:    []envtest.Option{envtest.WithWorkloadCRDs()},
		config: func(c *config.Serve) { c.Quota.ConfirmationWindow = 10 * time.Minute },
	})
	s.populate(t)

	for _, tc := range []struct {
		file string
		// edit adapts the example to the test cluster (8 nodes × 8 GPUs,
		// two NVLink cliques of 32).
		edit func(string) string
		gpus int
		// children are the objects between the gang and its pods, as its
		// controller creates them: each gets the gang's directives.
		children func(t *testing.T, owner *unstructured.Unstructured) []*unstructured.Unstructured
	}{
		{file: "mpijob-tensorflow-benchmarks.yaml", gpus: 2},
		{file: "rayjob-pytorch-text-classifier.yaml", gpus: 1},
		{file: "raycluster-complete.yaml", gpus: 0},
		{file: "lws-vllm-gpu.yaml", gpus: 32, children: func(t *testing.T, lws *unstructured.Unstructured) []*unstructured.Unstructured {
			leader := s.createChild(t, lws, "apps/v1", "StatefulSet", "vllm", map[string]any{
				"replicas": int64(2), "serviceName": "vllm",
				"selector": map[string]any{"matchLabels": map[string]any{"app": "vllm"}},
				"template": always(podTemplate("app", "vllm", 8)),
			})
			pod := s.createChild(t, leader, "v1", "Pod", "vllm-0", podTemplate("app", "vllm", 8))
			// A worker StatefulSet is owned by its group's leader pod.
			workers := s.createChild(t, pod, "apps/v1", "StatefulSet", "vllm-0", map[string]any{
				"replicas": int64(1), "serviceName": "vllm",
				"selector": map[string]any{"matchLabels": map[string]any{"app": "vllm-0"}},
				"template": always(podTemplate("app", "vllm-0", 8)),
			})
			return []*unstructured.Unstructured{leader, pod, workers, s.createChild(t, workers, "v1", "Pod", "vllm-0-1", podTemplate("app", "vllm-0", 8))}
		}},
		{file: "trainjob-torch-ddp.yaml", gpus: 10,
			edit: func(m string) string {
				return strings.ReplaceAll(m, "namespace: tenant-alpha", "namespace: "+kindsNamespace)
			},
			children: func(t *testing.T, tj *unstructured.Unstructured) []*unstructured.Unstructured {
				js := s.createChild(t, tj, "jobset.x-k8s.io/v1alpha2", "JobSet", tj.GetName(), map[string]any{
					"replicatedJobs": []any{map[string]any{"name": "node", "replicas": int64(1), "template": map[string]any{
						"spec": map[string]any{"parallelism": int64(5), "completions": int64(5), "template": podTemplate("job", "node", 2)},
					}}},
				})
				job := s.createChild(t, js, "batch/v1", "Job", tj.GetName()+"-node-0", map[string]any{
					"parallelism": int64(5), "completions": int64(5), "template": podTemplate("job", "node", 2),
				})
				return []*unstructured.Unstructured{js, job, s.createChild(t, job, "v1", "Pod", tj.GetName()+"-node-0-0", podTemplate("job", "node", 2))}
			}},
		{file: "jobset-gpu-exclusive.yaml", gpus: 24,
			// One replicated job of 3 workers × 8 GPUs (with the driver, 4
			// pods: one clique) instead of the example's 2 × 4.
			edit: func(m string) string {
				m = strings.Replace(m, "replicas: 2", "replicas: 1", 1)
				return strings.ReplaceAll(strings.ReplaceAll(m, "completions: 4", "completions: 3"), "parallelism: 4", "parallelism: 3")
			},
			children: func(t *testing.T, js *unstructured.Unstructured) []*unstructured.Unstructured {
				job := s.createChild(t, js, "batch/v1", "Job", "driver-ready-worker-start-workers-0", map[string]any{
					"parallelism": int64(3), "completions": int64(3), "template": podTemplate("job", "workers", 8),
				})
				return []*unstructured.Unstructured{job, s.createChild(t, job, "v1", "Pod", "driver-ready-worker-start-workers-0-0", podTemplate("job", "workers", 8))}
			}},
		{file: "statefulset-inference.yaml", gpus: 6},
	} {
		t.Run(strings.TrimSuffix(tc.file, ".yaml"), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("../../workload/testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			manifest := string(raw)
			if tc.edit != nil {
				manifest = tc.edit(manifest)
			}
			obj := object(t, manifest)
			obj.SetNamespace(kindsNamespace)
			if obj.GetName() == "" {
				obj.SetName(strings.TrimSuffix(obj.GetGenerateName(), "-"))
			}
			before := s.gpusInUse()
			if err := s.env.Client.Create(context.Background(), obj); err != nil {
				t.Fatalf("create %s %s: %v", obj.GetKind(), obj.GetName(), err)
			}
			d, ok, err := scheduler.RecordedDirectives(obj.GetAnnotations())
			if err != nil || !ok {
				t.Fatalf("%s %s was stored without Mandate's directives (%v)", obj.GetKind(), obj.GetName(), err)
			}
			if d.Scheduler != "kai" || d.Queue != kindsNamespace || d.PriorityClass == "" {
				t.Errorf("directives = %+v, want tenant product's KAI queue and a priority class", d)
			}
			w, err := workload.Normalize(obj)
			if err != nil {
				t.Fatal(err)
			}
			if w.TotalGPUs != tc.gpus {
				t.Errorf("%s counts %d GPUs, want %d", obj.GetKind(), w.TotalGPUs, tc.gpus)
			}
			for _, ptr := range w.Templates {
				if ptr == workload.NoTemplate {
					continue
				}
				if got := templatePriority(t, obj, ptr); got != d.PriorityClass {
					t.Errorf("%s %s: the pod template at %s has priority class %q, want %q", obj.GetKind(), obj.GetName(), ptr, got, d.PriorityClass)
				}
			}
			after := s.gpusInUse()
			if after-before != tc.gpus {
				t.Fatalf("admitting %s %s took %d GPUs of tenant product's quota, want the gang's %d", obj.GetKind(), obj.GetName(), after-before, tc.gpus)
			}
			var children []*unstructured.Unstructured
			if tc.children != nil {
				children = tc.children(t, obj)
			}
			// Pods the operator creates straight under the gang, one per GPU role.
			for i, r := range w.Roles {
				if r.GPUsPerPod > 0 && r.Replicas > 0 && w.Templates[i] != workload.NoTemplate && tc.children == nil {
					children = append(children, s.createChild(t, obj, "v1", "Pod", fmt.Sprintf("%s-%d", obj.GetName(), i), podTemplate("role", r.Name, r.GPUsPerPod)))
				}
			}
			for _, c := range children {
				cd, ok, err := scheduler.RecordedDirectives(c.GetAnnotations())
				if err != nil || !ok {
					t.Fatalf("%s %s was stored without its gang's directives (%v)", c.GetKind(), c.GetName(), err)
				}
				if cd.PriorityClass != d.PriorityClass || cd.Queue != d.Queue || cd.Preemptible != d.Preemptible {
					t.Errorf("%s %s got directives %+v, want its gang's %+v", c.GetKind(), c.GetName(), cd, d)
				}
				if c.GetKind() == "Pod" {
					expect(t, c, "spec.priorityClassName", d.PriorityClass)
				}
				if ref := metav1.GetControllerOf(c); ref.UID != obj.GetUID() {
					var owner workload.Owner
					if err := json.Unmarshal([]byte(c.GetAnnotations()[workload.AnnotationGangOwner]), &owner); err != nil || owner.UID != string(obj.GetUID()) {
						t.Errorf("%s %s (controller %s %s) names its gang %q, want %s %s", c.GetKind(), c.GetName(), ref.Kind, ref.Name,
							c.GetAnnotations()[workload.AnnotationGangOwner], obj.GetKind(), obj.GetName())
					}
				}
			}
			podGPUs := 0
			for _, c := range children {
				if c.GetKind() == "Pod" {
					pw, err := workload.Normalize(c)
					if err != nil {
						t.Fatal(err)
					}
					podGPUs += pw.TotalGPUs
				}
			}
			envtest.WaitFor(t, 20*time.Second, fmt.Sprintf("the quota ledger to count %d GPUs of pods of %s %s", podGPUs, obj.GetKind(), obj.GetName()), func() bool {
				return s.gangPodGPUs(string(obj.GetUID())) == podGPUs
			})
			if got := s.gpusInUse(); got != after {
				t.Errorf("after its %d children, tenant product uses %d GPUs, want %d: a gang's pods count once", len(children), got, after)
			}
		})
	}
}

// TestDeploymentScaleUpIsDecided: a Deployment of 4 replicas × 1 GPU is one
// decision counting 4 GPUs; its pods, made by the real Deployment and
// ReplicaSet controllers (owner chain Deployment → ReplicaSet → Pod), get
// its directives and count nothing more; scaled to 200, past tenant
// product's ceiling of 160, through its scale subresource or an UPDATE of
// the Deployment, it is denied; scaled to 6, and to zero, it is admitted.
func TestDeploymentScaleUpIsDecided(t *testing.T) {
	s := startWith(t, startOptions{config: func(c *config.Serve) { c.Quota.ConfirmationWindow = 10 * time.Minute }})
	s.populate(t)
	envtest.StartControllers(t, s.env, "", "deployment-controller", "replicaset-controller")
	ctx := context.Background()
	raw, err := os.ReadFile("../../workload/testdata/deployment-inference.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dep := &appsv1.Deployment{}
	if err := yaml.Unmarshal(raw, dep); err != nil {
		t.Fatal(err)
	}
	dep.Namespace = kindsNamespace
	before := s.gpusInUse()
	if err := s.env.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	if got := s.gpusInUse() - before; got != 4 {
		t.Fatalf("a Deployment of 4 × 1 GPU took %d GPUs of product's quota, want 4", got)
	}
	var pods corev1.PodList
	envtest.WaitFor(t, 2*time.Minute, "the ReplicaSet controller to create 4 pods", func() bool {
		return s.env.Client.List(ctx, &pods, client.InNamespace(kindsNamespace), client.MatchingLabels{"app": "llm-serve"}) == nil &&
			len(pods.Items) == 4
	})
	for _, p := range pods.Items {
		if p.Spec.PriorityClassName != "inference" || p.Labels["kai.scheduler/queue"] != kindsNamespace {
			t.Errorf("pod %s: priority class %q, queue %q; want the Deployment's inference and %s", p.Name, p.Spec.PriorityClassName, p.Labels["kai.scheduler/queue"], kindsNamespace)
		}
		var owner workload.Owner
		if err := json.Unmarshal([]byte(p.Annotations[workload.AnnotationGangOwner]), &owner); err != nil || owner.UID != string(dep.UID) {
			t.Errorf("pod %s names its gang %q, want Deployment %s", p.Name, p.Annotations[workload.AnnotationGangOwner], dep.Name)
		}
	}
	envtest.WaitFor(t, 20*time.Second, "the quota ledger to count the 4 pods as the Deployment's", func() bool {
		return s.gangPodGPUs(string(dep.UID)) == 4
	})
	if got := s.gpusInUse() - before; got != 4 {
		t.Errorf("with its 4 pods, the Deployment counts %d GPUs, want 4: its pods count once", got)
	}

	// kubectl scale (and a HorizontalPodAutoscaler) raise replicas through
	// the scale subresource.
	scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 200}}
	err = s.env.Client.SubResource("scale").Update(ctx, dep, client.WithSubResourceBody(scale))
	if err == nil || !strings.Contains(err.Error(), "needs 200 nvidia.com/gpu but tenant product's ceiling is 160") {
		t.Fatalf("scaling the Deployment's scale subresource to 200 past product's ceiling of 160: error = %v, want a denial naming the ceiling", err)
	}
	// The Deployment controller writes the Deployment too: retry on a
	// conflict, never on a denial.
	update := func(replicas int32) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
				return err
			}
			dep.Spec.Replicas = ptr.To(replicas)
			return s.env.Client.Update(ctx, dep)
		})
	}
	err = update(200)
	if err == nil || !strings.Contains(err.Error(), "needs 200 nvidia.com/gpu but tenant product's ceiling is 160") {
		t.Fatalf("scaling the Deployment to 200 × 1 GPU past product's ceiling of 160: error = %v, want a denial naming the ceiling", err)
	}
	if err := update(6); err != nil {
		t.Fatalf("scaling the Deployment to 6, within the ceiling: %v", err)
	}
	if err := update(0); err != nil {
		t.Fatalf("scaling the Deployment to zero: %v", err)
	}
}

// gpusInUse is tenant product's nvidia.com/gpu in use or reserved.
func (s *suite) gpusInUse() int {
	return s.srv.State.Usage(kindsNamespace)["product"]["nvidia.com/gpu"].Total
}

// createChild creates an object of kind as owner's controller would:
// controller reference to owner, in owner's namespace. It must be admitted.
func (s *suite) createChild(t *testing.T, owner *unstructured.Unstructured, apiVersion, kind, name string, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	if kind == "Pod" {
		obj.Object = map[string]any{"metadata": spec["metadata"], "spec": spec["spec"]}
	}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	obj.SetNamespace(owner.GetNamespace())
	obj.SetName(name)
	obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(),
		Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)}})
	if err := s.env.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %s %s under %s %s: %v", kind, name, owner.GetKind(), owner.GetName(), err)
	}
	return obj
}

// gangPodGPUs is what the quota ledger counts of tenant product's pods
// whose gang owner has UID uid.
func (s *suite) gangPodGPUs(uid string) int {
	return s.gpusInUse() - s.srv.State.UsageExcluding(kindsNamespace, uid)["product"]["nvidia.com/gpu"].Total
}

// podTemplate is a pod template of one container asking for gpus, labelled key=value.
func podTemplate(key, value string, gpus int) map[string]any {
	q := resource.NewQuantity(int64(gpus), resource.DecimalSI).String()
	return map[string]any{
		"metadata": map[string]any{"labels": map[string]any{key: value}},
		"spec": map[string]any{
			"restartPolicy": string(corev1.RestartPolicyNever),
			"containers": []any{map[string]any{"name": "c", "image": "x",
				"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": q}}}},
		},
	}
}

// always is a pod template restarted always, as a StatefulSet's must be.
func always(tmpl map[string]any) map[string]any {
	tmpl["spec"].(map[string]any)["restartPolicy"] = string(corev1.RestartPolicyAlways)
	return tmpl
}

// templatePriority is the priority class of the pod template at JSON
// pointer ptr of obj.
func templatePriority(t *testing.T, obj *unstructured.Unstructured, ptr string) string {
	t.Helper()
	var cur any = obj.Object
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		switch node := cur.(type) {
		case map[string]any:
			cur = node[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i >= len(node) {
				t.Fatalf("%s: no element %q", ptr, tok)
			}
			cur = node[i]
		default:
			t.Fatalf("%s: %q is inside a scalar", ptr, tok)
		}
	}
	pc, _, _ := unstructured.NestedString(cur.(map[string]any), "spec", "priorityClassName")
	return pc
}
