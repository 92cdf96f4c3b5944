package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/certs"
	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/workload"
)

// platformGuarantee is tenant platform's guaranteed nvidia.com/gpu in the
// default model; its build class is non-preemptible.
const platformGuarantee = 8

// confirmationWindow is the quota.confirmationWindow these tests run with.
const confirmationWindow = 4 * time.Second

// TestUnconfirmedReservationsAreReleased: creates that the API server
// rejects after Mandate admitted them (an invalid container name is
// checked after mutating admission), and reviews POSTed straight to
// /mutate that no create follows, each reserve a guaranteed GPU; none is
// ever stored, so once the confirmation window has passed the tenant's
// whole guarantee is available again.
func TestUnconfirmedReservationsAreReleased(t *testing.T) {
	forEachLedger(t, func(t *testing.T, so startOptions) {
		so.config = func(c *config.Serve) { c.Quota.ConfirmationWindow = confirmationWindow }
		s := startWith(t, so)
		s.populate(t)
		ctx := context.Background()
		nonPreemptible := func() int {
			return s.reservedUsage(t, "platform")["platform"]["nvidia.com/gpu"].NonPreemptible
		}

		const rejected = platformGuarantee / 2
		for i := range rejected {
			pod := buildPod(fmt.Sprintf("rejected-%d", i))
			pod.Spec.Containers[0].Name = "Not_A_DNS_Label"
			err := s.env.Client.Create(ctx, pod)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create %d: error = %v, want Invalid (after Mandate admitted it)", i, err)
			}
		}
		forged := platformGuarantee - rejected
		for i := range forged {
			s.forgeReview(t, buildPod(fmt.Sprintf("forged-%d", i)))
		}
		start := time.Now()
		if got := nonPreemptible(); got != platformGuarantee {
			t.Fatalf("after %d rejected creates and %d forged reviews platform holds %d non-preemptible GPUs, want %d reserved",
				rejected, forged, got, platformGuarantee)
		}
		envtest.WaitFor(t, confirmationWindow+30*time.Second, "the unconfirmed reservations to be released", func() bool {
			return nonPreemptible() == 0
		})
		t.Logf("%d rejected creates and %d forged reviews held platform's guarantee of %d for %s (window %s)",
			rejected, forged, platformGuarantee, time.Since(start).Round(100*time.Millisecond), confirmationWindow)

		pod := buildPod("after-window")
		if err := s.env.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		if got := pod.Labels[workload.LabelPreemptible]; got != "false" {
			t.Errorf("the first pod after the window has mandate.dev/preemptible=%q, want false: the guarantee should be free again", got)
		}
	})
}

// TestDeploymentPodsSpendTheGuaranteeOnce: a bare ReplicaSet's pods (a
// ReplicaSet is not a governed kind, unlike a Deployment, so its pods are
// decided one by one) are created by the ReplicaSet controller with
// generateName, so they have no name when Mandate decides them; they are
// reserved under their request's uid all the same. With platform's guarantee raised to 16, of 40 one-GPU build pods
// exactly 16 run non-preemptible and the rest preemptible (the model's
// quotaPolicy.overGuarantee; each fits under the ceiling on its own, and
// the scheduler holds what the ceiling does not let run).
func TestDeploymentPodsSpendTheGuaranteeOnce(t *testing.T) {
	forEachLedger(t, func(t *testing.T, so startOptions) {
		const guarantee, ceiling, replicas = 16, 32, 40
		policies := fixtures.PolicyDir(t, func(model map[string]any) {
			quota := model["tenants"].(map[string]any)["platform"].(map[string]any)["quota"].(map[string]any)
			quota["nvidia.com/gpu"] = map[string]any{"guaranteed": guarantee, "ceiling": ceiling}
		})
		so.config = func(c *config.Serve) {
			c.Quota.ConfirmationWindow = time.Minute
			c.Policies = policies
		}
		s := startWith(t, so)
		s.populate(t)
		envtest.StartControllers(t, s.env, "", "replicaset-controller")
		ctx := context.Background()
		template := buildPod("")
		dep := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "platform"},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptr.To(int32(replicas)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: template.Spec},
			},
		}
		if err := s.env.Client.Create(ctx, dep); err != nil {
			t.Fatal(err)
		}
		var pods corev1.PodList
		envtest.WaitFor(t, 2*time.Minute, fmt.Sprintf("the ReplicaSet controller to create %d pods", replicas), func() bool {
			return s.env.Client.List(ctx, &pods, client.InNamespace("platform"), client.MatchingLabels{"app": "web"}) == nil &&
				len(pods.Items) == replicas
		})
		byPreemptible := map[string]int{}
		for _, p := range pods.Items {
			if p.GenerateName == "" {
				t.Errorf("pod %s was not made with generateName", p.Name)
			}
			byPreemptible[p.Labels[workload.LabelPreemptible]]++
		}
		if byPreemptible["false"] != guarantee || byPreemptible["true"] != replicas-guarantee {
			t.Errorf("of %d ReplicaSet pods, by mandate.dev/preemptible: %v; want %d non-preemptible (platform's guarantee), the rest preemptible",
				replicas, byPreemptible, guarantee)
		}
	})
}

// createBuildJob creates a Job of tenant platform of one-GPU build pods.
func (s *suite) createBuildJob(t *testing.T, name string, parallelism, completions int32) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "platform"},
		Spec: batchv1.JobSpec{Parallelism: ptr.To(parallelism), Completions: ptr.To(completions),
			Template: corev1.PodTemplateSpec{Spec: buildPod("").Spec}},
	}
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	if err := s.env.Client.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	return job
}

// buildPod is a one-GPU build pod of tenant platform.
func buildPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "platform"},
		Spec: corev1.PodSpec{
			PriorityClassName: "build",
			Containers: []corev1.Container{{Name: "build", Image: "registry.example/build:1",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}},
		},
	}
}

// forgeReview POSTs an AdmissionReview for pod straight to /mutate, as
// anything that reaches the webhook port could (with the replicas that
// admit only the API server, a review the API server sent for a create
// that never completed), and checks it was admitted.
func (s *suite) forgeReview(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	hooks := s.env.Environment.WebhookInstallOptions
	addr := net.JoinHostPort(hooks.LocalServingHost, strconv.Itoa(hooks.LocalServingPort))
	out, err := postReview(s.reviewClient(t), addr, pod)
	if err != nil || !out.Allowed {
		t.Fatalf("forged review of %s: %v %+v", pod.Name, err, out)
	}
}

// reviewClient is an HTTPS client of the webhook servers, presenting the
// API server's client certificate when the replicas require one.
func (s *suite) reviewClient(t *testing.T) *http.Client {
	t.Helper()
	tc := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // envtest's serving certificate
	if s.env.WebhookClientCA != nil {
		cert, err := certs.IssueClient(s.env.WebhookClientCA, envtest.WebhookClientCN, time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
}

// postReview POSTs an AdmissionReview of pod's CREATE (request uid
// "forged-" and its name) to the /mutate of the webhook server at addr
// through c and returns its response.
func postReview(c *http.Client, addr string, pod *corev1.Pod) (*admissionv1.AdmissionResponse, error) {
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	raw, err := json.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("unable to encode pod %s: %w", pod.Name, err)
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID("forged-" + pod.Name),
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: pod.Namespace, Name: pod.Name, Operation: admissionv1.Create,
			Object: runtime.RawExtension{Raw: raw}},
	})
	if err != nil {
		return nil, fmt.Errorf("unable to encode the review of pod %s: %w", pod.Name, err)
	}
	resp, err := c.Post("https://"+addr+"/mutate", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("unable to post the review of pod %s: %w", pod.Name, err)
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Response == nil {
		return nil, fmt.Errorf("the review of pod %s got no response (HTTP %d): %v", pod.Name, resp.StatusCode, err)
	}
	return out.Response, nil
}

// TestPodsClaimingAnAdmittedJobBeyondItsSize: a Job admitted for 2 one-GPU
// build pods lends its directives to 2 pods that name it as their
// controller; the tenant's further pods naming it are decided on their
// own, so of 12 such pods exactly platform's guarantee of 8 runs
// non-preemptible, and one asking for 8 GPUs, more than any of the Job's
// pods, is decided too (preemptible: the guarantee is spent).
func TestPodsClaimingAnAdmittedJobBeyondItsSize(t *testing.T) {
	forEachLedger(t, func(t *testing.T, so startOptions) {
		s := startWith(t, so)
		s.populate(t)
		ctx := context.Background()
		job := s.createBuildJob(t, "train", 2, 2)
		if job.Labels[workload.LabelPreemptible] != "" || job.Spec.Template.Labels[workload.LabelPreemptible] != "false" {
			t.Fatalf("the Job was admitted with pod labels %v, want non-preemptible", job.Spec.Template.Labels)
		}
		claimer := func(name string, gpus string) *corev1.Pod {
			pod := buildPod(name)
			pod.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = resource.MustParse(gpus)
			pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
				Controller: ptr.To(true)}}
			return pod
		}
		byPreemptible := map[string]int{}
		const claimers = 12
		for i := range claimers {
			pod := claimer(fmt.Sprintf("claimer-%d", i), "1")
			if err := s.env.Client.Create(ctx, pod); err != nil {
				t.Fatalf("claimer %d: %v", i, err)
			}
			byPreemptible[pod.Labels[workload.LabelPreemptible]]++
		}
		if byPreemptible["false"] != platformGuarantee || byPreemptible["true"] != claimers-platformGuarantee {
			t.Errorf("of %d pods naming the 2-pod Job as controller, by mandate.dev/preemptible: %v; want %d non-preemptible (2 of the Job's, 6 decided within platform's guarantee), the rest preemptible",
				claimers, byPreemptible, platformGuarantee)
		}
		greedy := claimer("greedy", "8")
		if err := s.env.Client.Create(ctx, greedy); err != nil {
			t.Fatal(err)
		}
		if got := greedy.Labels[workload.LabelPreemptible]; got != "true" {
			t.Errorf("an 8-GPU pod naming the 1-GPU-per-pod Job has mandate.dev/preemptible=%q, want true: decided on its own past platform's guarantee", got)
		}
	})
}

// TestDaemonSetPods: a pod is admitted undecided as a DaemonSet's only when
// it asks for no GPUs and the DaemonSet it names exists with that UID. A
// pod with a made-up DaemonSet owner, or a real DaemonSet's GPU pod, is
// decided like any other.
func TestDaemonSetPods(t *testing.T) {
	forEachLedger(t, func(t *testing.T, so startOptions) {
		s := startWith(t, so)
		s.populate(t)
		ctx := context.Background()
		c := s.env.Client
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}}); err != nil {
			t.Fatal(err)
		}
		daemonSet := func(ns, name string) *appsv1.DaemonSet {
			ds := &appsv1.DaemonSet{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: appsv1.DaemonSetSpec{
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/agent:1"}}}},
				},
			}
			if err := c.Create(ctx, ds); err != nil {
				t.Fatal(err)
			}
			return ds
		}
		podOf := func(ns, name, owner string, uid types.UID, gpus string, class string) *corev1.Pod {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: owner, UID: uid, Controller: ptr.To(true)}}},
				Spec: corev1.PodSpec{PriorityClassName: class, Containers: []corev1.Container{{Name: "c", Image: "registry.example/agent:1"}}},
			}
			if gpus != "" {
				pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(gpus)}
			}
			return pod
		}

		exporter := daemonSet("monitoring", "node-exporter")
		pod := podOf("monitoring", "node-exporter-x1", exporter.Name, exporter.UID, "", "")
		if err := c.Create(ctx, pod); err != nil {
			t.Fatalf("a CPU pod of a real DaemonSet in an untenanted namespace: %v", err)
		}
		for k := range pod.Annotations {
			if strings.HasPrefix(k, "mandate.dev/") {
				t.Errorf("the DaemonSet's pod was decided: it carries %s", k)
			}
		}

		ghost := podOf("vision", "ghost-0", "ghost", types.UID("0b1c2d3e-dead-4000-8000-000000000000"), "8", "build")
		if err := c.Create(ctx, ghost); !apierrors.IsForbidden(err) {
			t.Errorf("an 8-GPU build pod of research-vision naming a DaemonSet that does not exist: error = %v, want Forbidden (decided: build is above its tiers)", err)
		}

		agent := daemonSet("platform", "gpu-agent")
		gpuPod := podOf("platform", "gpu-agent-x1", agent.Name, agent.UID, "1", "build")
		if err := c.Create(ctx, gpuPod); err != nil {
			t.Fatal(err)
		}
		if got := gpuPod.Labels[workload.LabelPreemptible]; got == "" {
			t.Errorf("a real DaemonSet's GPU pod was not decided (no %s)", workload.LabelPreemptible)
		}

		// Undecided, it carries no directives, and no UPDATE may add
		// them: the eviction guard and the gang-whole controller trust
		// them as Mandate's.
		cpuPod := podOf("platform", "gpu-agent-x2", agent.Name, agent.UID, "", "")
		if err := c.Create(ctx, cpuPod); err != nil {
			t.Fatal(err)
		}
		if _, marked := cpuPod.Annotations[scheduler.AnnotationDirectives]; marked {
			t.Fatalf("a real DaemonSet's CPU pod was decided: it carries %s", scheduler.AnnotationDirectives)
		}
		marks, err := scheduler.Marks(evaluator.Directives{PriorityClass: "build", GangMin: 2})
		if err != nil {
			t.Fatal(err)
		}
		annotations, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{scheduler.AnnotationDirectives: marks}}})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Patch(ctx, cpuPod.DeepCopy(), client.RawPatch(types.MergePatchType, annotations))
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only Mandate records "+scheduler.AnnotationDirectives) {
			t.Errorf("a tenant writes directives on its undecided pod: error = %v, want Forbidden", err)
		}
		if err := c.Patch(ctx, cpuPod.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"x"}}}`))); err != nil {
			t.Errorf("another update of the undecided pod: %v", err)
		}
	})
}

// TestJobParallelismRaisedIsDecided: raising an admitted Job's parallelism
// decides its whole new demand as a create would be, without counting its
// own pods twice: past platform's ceiling of 16 it is denied; past its
// guarantee of 8 it would run preemptible, which its non-preemptible pods
// cannot become, so it is refused; within both it is admitted and
// reserved.
func TestJobParallelismRaisedIsDecided(t *testing.T) {
	forEachLedger(t, func(t *testing.T, so startOptions) {
		s := startWith(t, so)
		s.populate(t)
		ctx := context.Background()
		job := s.createBuildJob(t, "grow", 2, 40)
		total := func(u map[string]map[string]ledger.Usage) int { return u["platform"]["nvidia.com/gpu"].Total }
		// Held by the stored Job, on every replica's informers.
		s.waitUsage(t, "platform's GPUs after admitting the 2-pod Job", "platform", total, 2)
		scale := func(n int) error {
			patch := fmt.Sprintf(`{"spec":{"parallelism":%d}}`, n)
			return s.env.Client.Patch(ctx, job.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))
		}
		if err := scale(20); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ceiling") {
			t.Errorf("parallelism 2 → 20 (20 GPUs, ceiling 16): error = %v, want Forbidden naming the ceiling", err)
		}
		if err := scale(12); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "delete and create it again") {
			t.Errorf("parallelism 2 → 12 (past the guarantee of 8): error = %v, want Forbidden: it would run preemptible", err)
		}
		if err := scale(4); err != nil {
			t.Fatalf("parallelism 2 → 4: %v", err)
		}
		// Its new demand held once, not beside the old.
		s.waitUsage(t, "platform's GPUs after the Job grew to 4 pods", "platform", total, 4)
	})
}

// TestGangOwnerChangesAreDecided: an admitted PyTorchJob or Volcano Job
// cannot be changed into what the authority model did not decide: more
// replicas past the tenant's ceiling are denied like a create, and another
// queue, class or priority class, in its metadata, its pod templates or
// its own spec, is refused; a change that is not Mandate's concern (the
// image) goes through.
func TestGangOwnerChangesAreDecided(t *testing.T) {
	forEachLedger(t, func(t *testing.T, so startOptions) {
		s := startWith(t, so)
		s.populate(t)
		ctx := context.Background()
		update := func(obj *unstructured.Unstructured, patchType types.PatchType, patch string) error {
			return s.env.Client.Patch(ctx, obj.DeepCopy(), client.RawPatch(patchType, []byte(patch)))
		}
		for _, tc := range []struct {
			name     string
			manifest string
			changes  []struct{ what, patch, want string }
		}{
			{name: "PyTorchJob", manifest: fixtures.LLMFinetune(1), changes: []struct{ what, patch, want string }{
				{"workers 1 → 200", `[{"op":"replace","path":"/spec/pytorchReplicaSpecs/Worker/replicas","value":200}]`, "ceiling"},
				{"another tenant's queue on the workers", `[{"op":"replace","path":"/spec/pytorchReplicaSpecs/Worker/template/metadata/annotations/scheduling.volcano.sh~1queue-name","value":"product"}]`, "queue-name"},
				{"class inference", `[{"op":"add","path":"/metadata/labels","value":{"mandate.dev/class":"inference"}}]`, "mandate.dev/class"},
				{"priority class inference on the workers", `[{"op":"replace","path":"/spec/pytorchReplicaSpecs/Worker/template/spec/priorityClassName","value":"inference"}]`, "priorityClassName"},
				{"the image", `[{"op":"replace","path":"/spec/pytorchReplicaSpecs/Worker/template/spec/containers/0/image","value":"llama:2"}]`, ""},
			}},
			{name: "VolcanoJob", manifest: llmVolcanoJob, changes: []struct{ what, patch, want string }{
				{"task replicas 2 → 200", `[{"op":"replace","path":"/spec/tasks/0/replicas","value":200}]`, "ceiling"},
				{"another tenant's queue", `[{"op":"replace","path":"/spec/queue","value":"product"}]`, "/spec/queue"},
				{"class inference", `[{"op":"add","path":"/metadata/labels","value":{"mandate.dev/class":"inference"}}]`, "mandate.dev/class"},
				{"the image", `[{"op":"replace","path":"/spec/tasks/0/template/spec/containers/0/image","value":"megatron:2"}]`, ""},
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				obj := s.create(t, tc.manifest)
				for _, c := range tc.changes {
					err := update(obj, types.JSONPatchType, c.patch)
					switch {
					case c.want == "" && err != nil:
						t.Errorf("%s: %v, want admitted (not Mandate's concern)", c.what, err)
					case c.want != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), c.want)):
						t.Errorf("%s: error = %v, want Forbidden naming %q", c.what, err, c.want)
					}
				}
			})
		}
	})
}
