package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/workload"
)

// The cases of TestHoldsOutliveTheConfirmationWindow, each in its own
// tenant (holdTenants) of one two-replica suite.

// holdsDRA: two running pods whose 8 GPUs each come from allocated
// ResourceClaims fill the guarantee of 16; after the window two more
// 8-GPU DRA pods are denied or preemptible.
func (s *suite) holdsDRA(t *testing.T) {
	const tenant = "hold-dra"
	ctx := context.Background()
	c := s.env.Client
	held := newHoldTally(tenant)
	claim := func(name string) *resourcev1.ResourceClaim {
		cl := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: name},
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
				Name: "gpus", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", Count: 8}}}}}}
		if err := c.Create(ctx, cl); err != nil {
			t.Fatalf("create ResourceClaim %s: %v", name, err)
		}
		// Admission reads claims from each replica's informer.
		envtest.WaitFor(t, 20*time.Second, "every replica's cache to hold ResourceClaim "+name, func() bool {
			for _, r := range s.replicas {
				if r.Manager.GetCache().Get(ctx, client.ObjectKeyFromObject(cl), &resourcev1.ResourceClaim{}) != nil {
					return false
				}
			}
			return true
		})
		return cl
	}
	draPod := func(name string) (*corev1.Pod, error) {
		pod := holdPod(tenant, name, "", "")
		pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: ptr.To(name)}}
		pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpus"}}}
		return pod, s.admit(pod)
	}
	for n, name := range []string{"dra-a", "dra-b"} {
		cl := claim(name)
		pod, err := draPod(name)
		if err != nil {
			t.Fatalf("create pod %s: %v", name, err)
		}
		held.count("pod "+name, pod.Labels[workload.LabelPreemptible], "", 8000)
		// What a DRA driver and the scheduler would do: allocate the
		// claim's 8 devices on a node, and run the pod there.
		node := fixtures.GPUNode(n).Name
		cl.Status.Allocation = &resourcev1.AllocationResult{}
		for d := range 8 {
			cl.Status.Allocation.Devices.Results = append(cl.Status.Allocation.Devices.Results, resourcev1.DeviceRequestAllocationResult{
				Request: "gpus", Driver: "gpu.nvidia.com", Pool: node, Device: fmt.Sprintf("gpu-%d", d)})
		}
		if err := c.Status().Update(ctx, cl); err != nil {
			t.Fatalf("allocate ResourceClaim %s: %v", name, err)
		}
		pod.Status.Phase = corev1.PodRunning
		if err := c.Status().Update(ctx, pod); err != nil {
			t.Fatalf("run pod %s: %v", name, err)
		}
		s.proxy.Rotate()
		envtest.WaitFor(t, 20*time.Second, "every replica's cache to see ResourceClaim "+name+" allocated", func() bool {
			for _, r := range s.replicas {
				var cl resourcev1.ResourceClaim
				if r.Manager.GetCache().Get(ctx, client.ObjectKey{Namespace: tenant, Name: name}, &cl) != nil || cl.Status.Allocation == nil {
					return false
				}
			}
			return true
		})
	}
	held.check(t, "the two running DRA pods", map[string]int{"": 16})
	pastWindow()
	for _, name := range []string{"dra-c", "dra-d"} {
		claim(name)
		pod, err := draPod(name)
		switch {
		case apierrors.IsForbidden(err):
			t.Logf("DRA pod %s was denied: %v", name, err)
		case err != nil:
			t.Fatalf("create pod %s: %v", name, err)
		default:
			held.count("pod "+name, pod.Labels[workload.LabelPreemptible], "", 8000)
		}
	}
	held.check(t, "two running 8-GPU DRA pods, then two more after the window", map[string]int{"": 16})
}

// holdsFractions: H100's guarantee of 4 is filled by 4 half-GPU KAI pods
// and 4 pods of half an H100's memory; after the window 2 more half-GPU
// pods and 4 whole-GPU H100 pods are denied or preemptible.
func (s *suite) holdsFractions(t *testing.T) {
	const tenant = "hold-frac"
	held := newHoldTally(tenant)
	guarantees := map[string]int{"": 16, h100: 4}
	create := func(name, gpus string, annotations map[string]string, milli int) {
		t.Helper()
		pod := holdPod(tenant, name, gpus, h100)
		pod.Annotations = annotations
		err := s.admit(pod)
		switch {
		case apierrors.IsForbidden(err):
			t.Logf("pod %s was denied: %v", name, err)
		case err != nil:
			t.Fatalf("create pod %s: %v", name, err)
		default:
			held.count("pod "+name, pod.Labels[workload.LabelPreemptible], h100, milli)
		}
	}
	half := map[string]string{workload.AnnotationGPUFraction: "0.5"}
	halfMemory := map[string]string{workload.AnnotationGPUMemory: "40960"}
	for i := range 4 {
		create(fmt.Sprintf("half-%d", i), "", half, 500)
	}
	for i := range 4 {
		create(fmt.Sprintf("half-memory-%d", i), "", halfMemory, 500)
	}
	held.check(t, "4 half-GPU and 4 half-memory H100 pods", guarantees)
	// Not an assertion: shared usage is rounded up to whole GPUs before
	// a decision adds its own share, so the last half may be decided
	// preemptible; the checks are that nothing goes over.
	t.Logf("4 half-GPU and 4 half-memory H100 pods hold %s of H100's guarantee of 4 non-preemptible: %s", gpus(held.milli[h100]), held.list(h100))
	pastWindow()
	for i := range 2 {
		create(fmt.Sprintf("half-late-%d", i), "", half, 500)
	}
	held.check(t, "2 more half-GPU H100 pods after the window", guarantees)
	for i := range 4 {
		create(fmt.Sprintf("whole-%d", i), "1", nil, 1000)
	}
	held.check(t, "4 whole-GPU H100 pods after the fractions", guarantees)
}

// holdsRepin: a Deployment and a StatefulSet of 4 GPUs each on B200 (B200
// full) and a pod of 8 on H100 (H100 full); after the window each of the
// two is re-pinned to H100: denied or made preemptible, never over H100's
// guarantee.
func (s *suite) holdsRepin(t *testing.T) {
	const tenant = "hold-repin"
	ctx := context.Background()
	c := s.env.Client
	guarantees := map[string]int{"": 16, h100: 8, b200: 8}
	template := func(app string) corev1.PodTemplateSpec {
		pod := holdPod(tenant, "", "4", b200)
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}}, Spec: pod.Spec}
	}
	selector := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: tenant},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Selector: selector("web"), Template: template("web")}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: tenant},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(1)), ServiceName: "db", Selector: selector("db"), Template: template("db")}}
	filler := holdPod(tenant, "h100-filler", "8", h100)
	for _, obj := range []client.Object{dep, sts, filler} {
		if err := s.admit(obj); err != nil {
			t.Fatalf("create %s: %v", obj.GetName(), err)
		}
	}
	// tally reads the three as stored.
	tally := func() *holdTally {
		held := newHoldTally(tenant)
		if err := c.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(sts), sts); err != nil {
			t.Fatal(err)
		}
		for _, w := range []struct {
			what string
			tmpl corev1.PodTemplateSpec
			n    int32
		}{{"Deployment web", dep.Spec.Template, *dep.Spec.Replicas}, {"StatefulSet db", sts.Spec.Template, *sts.Spec.Replicas}} {
			held.count(w.what, w.tmpl.Labels[workload.LabelPreemptible], w.tmpl.Spec.NodeSelector[workload.LabelProduct], int(w.n)*4000)
		}
		held.count("pod h100-filler", filler.Labels[workload.LabelPreemptible], h100, 8000)
		return held
	}
	tally().check(t, "a Deployment and a StatefulSet on B200 and a pod on H100", guarantees)
	if got := tally().milli[h100]; got != 8000 {
		t.Fatalf("the 8-GPU H100 pod holds %s non-preemptible H100 GPUs, want 8 (H100's whole guarantee)", gpus(got))
	}
	pastWindow()
	repin := func(obj client.Object, what string) {
		patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"nodeSelector":{%q:%q}}}}}`, workload.LabelProduct, h100)
		err := c.Patch(ctx, obj, client.RawPatch(types.StrategicMergePatchType, []byte(patch)))
		s.proxy.Rotate()
		switch {
		case apierrors.IsForbidden(err):
			t.Logf("re-pinning %s to H100 was denied: %v", what, err)
		case err != nil:
			t.Fatalf("re-pin %s to H100: %v", what, err)
		}
	}
	repin(dep.DeepCopy(), "Deployment web")
	tally().check(t, "the Deployment re-pinned from B200 to the full H100 after the window", guarantees)
	repin(sts.DeepCopy(), "StatefulSet db")
	tally().check(t, "the StatefulSet re-pinned from B200 to the full H100 after the window", guarantees)
}

// holdsUnsuspend: a Job created suspended (16 GPUs, the whole guarantee)
// while the tenant is empty; after the window a Job created running (8)
// and a pod (8) fill the guarantee; after the window again the suspended
// Job is unsuspended while the tenant is full: denied or preemptible,
// never over.
func (s *suite) holdsUnsuspend(t *testing.T) {
	const tenant = "hold-jobs"
	ctx := context.Background()
	c := s.env.Client
	job := func(name string, parallelism int32, suspend bool) *batchv1.Job {
		pod := holdPod(tenant, "", "8", "")
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tenant},
			Spec: batchv1.JobSpec{Parallelism: ptr.To(parallelism), Completions: ptr.To(parallelism), Suspend: ptr.To(suspend),
				Template: corev1.PodTemplateSpec{Spec: pod.Spec}}}
		if err := s.admit(j); err != nil {
			t.Fatalf("create Job %s: %v", name, err)
		}
		return j
	}
	later := job("later", 2, true)
	pastWindow()
	now := job("now", 1, false)
	filler := holdPod(tenant, "filler", "8", "")
	if err := s.admit(filler); err != nil {
		t.Fatal(err)
	}
	tally := func() *holdTally {
		held := newHoldTally(tenant)
		for _, j := range []*batchv1.Job{later, now} {
			if err := c.Get(ctx, client.ObjectKeyFromObject(j), j); err != nil {
				t.Fatal(err)
			}
			if ptr.Deref(j.Spec.Suspend, false) {
				continue // a suspended Job runs nothing
			}
			held.count("Job "+j.Name, j.Spec.Template.Labels[workload.LabelPreemptible], "", int(*j.Spec.Parallelism)*8000)
		}
		held.count("pod filler", filler.Labels[workload.LabelPreemptible], "", 8000)
		return held
	}
	tally().check(t, "a suspended Job, then a running Job and a pod", map[string]int{"": 16})
	if got := tally().milli[""]; got != 16000 {
		t.Fatalf("the running 8-GPU Job and the 8-GPU pod, created while the only other Job is suspended, hold %s non-preemptible GPUs, want 16 (the whole guarantee): %s",
			gpus(got), tally().list(""))
	}
	pastWindow()
	err := c.Patch(ctx, later.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`)))
	s.proxy.Rotate()
	switch {
	case apierrors.IsForbidden(err):
		t.Logf("unsuspending Job later was denied: %v", err)
	case err != nil:
		t.Fatalf("unsuspend Job later: %v", err)
	}
	tally().check(t, "the 16-GPU Job created suspended, unsuspended after the window while the tenant is full", map[string]int{"": 16})
}

// holdsLatePods: a PyTorchJob of 2 × 8 GPUs fills the guarantee of 16;
// after the window two 8-GPU pods of the tenant are denied or
// preemptible (the PyTorchJob's hold still counts); after another window
// the operator creates the PyTorchJob's pods, which get its terms.
func (s *suite) holdsLatePods(t *testing.T) {
	const tenant = "hold-late"
	held := newHoldTally(tenant)
	job := s.admitPyTorchJob(t, tenant, "train")
	held.count("PyTorchJob train", templatesPreemptible(t, job), "", 16000)
	held.check(t, "the PyTorchJob", map[string]int{"": 16})
	pastWindow()
	for i := range 2 {
		name := fmt.Sprintf("other-%d", i)
		pod := holdPod(tenant, name, "8", "")
		err := s.admit(pod)
		switch {
		case apierrors.IsForbidden(err):
			t.Logf("pod %s was denied: %v", name, err)
		case err != nil:
			t.Fatalf("create pod %s: %v", name, err)
		default:
			held.count("pod "+name, pod.Labels[workload.LabelPreemptible], "", 8000)
		}
	}
	held.check(t, "two 8-GPU pods after the PyTorchJob's window", map[string]int{"": 16})
	pastWindow()
	for _, role := range []string{"Master", "Worker"} {
		s.operatorPod(t, job, role, templatesPreemptible(t, job))
	}
}

// holdsForgedGangOwner: tenant hold-attacker's pods carry a
// mandate.dev/gang-owner annotation (and the non-preemptible label) naming
// tenant hold-victim's admitted PyTorchJob, two at once and one after the
// window: each is decided as the attacker's own, within its guarantee of
// 8, and takes no slot of the PyTorchJob: its master pod, created by the
// operator between the forgeries, and its worker, after the window, keep
// the PyTorchJob's terms.
func (s *suite) holdsForgedGangOwner(t *testing.T) {
	victim := s.admitPyTorchJob(t, "hold-victim", "llama")
	terms := templatesPreemptible(t, victim)
	victimHeld := newHoldTally("hold-victim")
	victimHeld.count("PyTorchJob llama", terms, "", 16000)
	victimHeld.check(t, "the victim's PyTorchJob", map[string]int{"": 16})
	owner, err := json.Marshal(map[string]string{"apiVersion": victim.GetAPIVersion(), "kind": victim.GetKind(),
		"name": victim.GetName(), "uid": string(victim.GetUID())})
	if err != nil {
		t.Fatal(err)
	}
	attackerHeld := newHoldTally("hold-attacker")
	forge := func(name string) {
		t.Helper()
		pod := holdPod("hold-attacker", name, "8", "")
		pod.Annotations = map[string]string{workload.AnnotationGangOwner: string(owner)}
		pod.Labels = map[string]string{workload.LabelPreemptible: "false"}
		err := s.admit(pod)
		switch {
		case apierrors.IsForbidden(err):
			t.Logf("forged pod %s was denied: %v", name, err)
		case err != nil:
			t.Fatalf("create pod %s: %v", name, err)
		default:
			attackerHeld.count("pod "+name, pod.Labels[workload.LabelPreemptible], "", 8000)
			if got, ok := pod.Annotations[workload.AnnotationGangOwner]; ok && got == string(owner) {
				t.Errorf("forged pod %s of tenant hold-attacker was stored still naming hold-victim's PyTorchJob as its gang owner", name)
			}
		}
	}
	forge("squatter-0")
	forge("squatter-1")
	s.operatorPod(t, victim, "Master", terms)
	pastWindow()
	forge("squatter-2")
	attackerHeld.check(t, "three 8-GPU pods forging a gang-owner annotation", map[string]int{"": 8})
	s.operatorPod(t, victim, "Worker", terms)
}

// admitPyTorchJob creates a PyTorchJob of a master and a worker of 8 GPUs
// each in tenant's namespace, which must be admitted.
func (s *suite) admitPyTorchJob(t *testing.T, tenant, name string) *unstructured.Unstructured {
	t.Helper()
	replica := `
      replicas: 1
      template:
        spec:
          priorityClassName: build
          containers:
          - {name: pytorch, image: registry.example/train:1, resources: {limits: {nvidia.com/gpu: "8"}}}`
	job := object(t, fmt.Sprintf(`
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: %s, namespace: %s}
spec:
  pytorchReplicaSpecs:
    Master:%s
    Worker:%s
`, name, tenant, replica, replica))
	if err := s.admit(job); err != nil {
		t.Fatalf("create PyTorchJob %s: %v", name, err)
	}
	return job
}

// operatorPod creates job's pod of role (Master, Worker) as the training
// operator does (the replica template's metadata and spec, a controller
// reference to the PyTorchJob) and checks it gets the PyTorchJob's terms
// (mandate.dev/preemptible=terms).
func (s *suite) operatorPod(t *testing.T, job *unstructured.Unstructured, role, terms string) {
	t.Helper()
	tmpl, _, err := unstructured.NestedMap(job.Object, "spec", "pytorchReplicaSpecs", role, "template")
	if err != nil || tmpl == nil {
		t.Fatalf("PyTorchJob %s has no %s template: %v", job.GetName(), role, err)
	}
	pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "spec": tmpl["spec"]}}
	if meta, ok := tmpl["metadata"].(map[string]any); ok {
		labels, _, _ := unstructured.NestedStringMap(meta, "labels")
		annotations, _, _ := unstructured.NestedStringMap(meta, "annotations")
		pod.SetLabels(labels)
		pod.SetAnnotations(annotations)
	}
	pod.SetNamespace(job.GetNamespace())
	pod.SetName(fmt.Sprintf("%s-%s-0", job.GetName(), strings.ToLower(role)))
	pod.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: job.GetAPIVersion(), Kind: job.GetKind(),
		Name: job.GetName(), UID: job.GetUID(), Controller: ptr.To(true)}})
	if err := s.admit(pod); err != nil {
		t.Errorf("the operator's %s pod of PyTorchJob %s/%s: %v", role, job.GetNamespace(), job.GetName(), err)
		return
	}
	if got := pod.GetLabels()[workload.LabelPreemptible]; got != terms {
		t.Errorf("the operator's %s pod of PyTorchJob %s/%s has mandate.dev/preemptible=%q, want the PyTorchJob's %q",
			role, job.GetNamespace(), job.GetName(), got, terms)
	}
}

// templatesPreemptible is the mandate.dev/preemptible label of a
// PyTorchJob's replica templates, which must agree.
func templatesPreemptible(t *testing.T, job *unstructured.Unstructured) string {
	t.Helper()
	specs, _, _ := unstructured.NestedMap(job.Object, "spec", "pytorchReplicaSpecs")
	seen := map[string]bool{}
	for role := range specs {
		label, _, _ := unstructured.NestedString(job.Object, "spec", "pytorchReplicaSpecs", role, "template", "metadata", "labels", workload.LabelPreemptible)
		seen[label] = true
	}
	if len(seen) != 1 {
		t.Fatalf("PyTorchJob %s's templates disagree on mandate.dev/preemptible: %v", job.GetName(), seen)
	}
	for label := range seen {
		return label
	}
	return ""
}
