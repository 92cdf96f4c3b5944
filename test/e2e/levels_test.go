package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/test/envtest"
)

// A PyTorchJob of 4 GPUs in all: the example model requires one node
// (≤ 8 GPUs), which Volcano's networkTopology has no tier for.
const visionOneNode = `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: %s, namespace: vision}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - {name: pytorch, image: detr, resources: {limits: {nvidia.com/gpu: "2"}}}
    Worker:
      replicas: 1
      template:
        spec:
          containers:
          - {name: pytorch, image: detr, resources: {limits: {nvidia.com/gpu: "2"}}}
`

// The same shape as a Volcano Job.
const visionOneNodeVolcanoJob = `
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: detr-small, namespace: vision}
spec:
  minAvailable: 2
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        restartPolicy: OnFailure
        containers:
        - {name: detr, image: detr, resources: {limits: {nvidia.com/gpu: "2"}}}
`

// TestLevelsReachVolcano: a gang the model requires on one node reaches
// Volcano as a required pod affinity among its pods on
// kubernetes.io/hostname, which the API server stores (the PyTorchJob and
// Volcano Job CRDs keep it); and a Volcano tenant's job admitted while its
// Queue is missing, then Closed, carries a warning saying so, and none once
// the Queue is Open.
func TestLevelsReachVolcano(t *testing.T) {
	s := start(t)
	s.populate(t)
	ctx := context.Background()
	warnings := &warningRecorder{}
	cfg := rest.CopyConfig(s.env.Config)
	cfg.WarningHandlerWithContext = warnings
	c, err := client.New(cfg, client.Options{Scheme: s.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	const queue = "research-vision"
	queueWarnings := func() []string {
		var out []string
		for _, w := range warnings.get() {
			if strings.Contains(w, "queue "+queue) {
				out = append(out, w)
			}
		}
		return out
	}

	// Missing Queue: admitted, with the warning; the stored templates keep
	// the gang's pod affinity.
	warnings.reset()
	job := object(t, fmt.Sprintf(visionOneNode, "detr-one-node"))
	if err := c.Create(ctx, job); err != nil {
		t.Fatalf("create PyTorchJob: %v", err)
	}
	want := "Volcano queue research-vision does not exist: the job will wait until it does; run `mandate sync`"
	if got := queueWarnings(); len(got) != 1 || got[0] != want {
		t.Errorf("warnings about the queue = %q, want [%q]", got, want)
	}
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(job.GroupVersionKind())
	if err := s.env.Client.Get(ctx, types.NamespacedName{Namespace: "vision", Name: "detr-one-node"}, stored); err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"Master", "Worker"} {
		assertGangAffinity(t, stored.Object, "mandate-pytorchjob-detr-one-node", "spec", "pytorchReplicaSpecs", role, "template")
	}

	vj := object(t, visionOneNodeVolcanoJob)
	if err := c.Create(ctx, vj); err != nil {
		t.Fatalf("create Volcano Job: %v", err)
	}
	storedVJ := &unstructured.Unstructured{}
	storedVJ.SetGroupVersionKind(vj.GroupVersionKind())
	if err := s.env.Client.Get(ctx, types.NamespacedName{Namespace: "vision", Name: "detr-small"}, storedVJ); err != nil {
		t.Fatal(err)
	}
	tasks, _, _ := unstructured.NestedSlice(storedVJ.Object, "spec", "tasks")
	if len(tasks) != 1 {
		t.Fatalf("stored Volcano Job has %d tasks, want 1", len(tasks))
	}
	assertGangAffinity(t, tasks[0].(map[string]any), "mandate-job-detr-small", "template")
	if _, found, _ := unstructured.NestedMap(storedVJ.Object, "spec", "networkTopology"); found {
		t.Errorf("a one-node gang got a networkTopology, which has no tier for a node")
	}

	// Closed, then Open.
	q := &unstructured.Unstructured{}
	q.SetGroupVersionKind(cluster.VolcanoQueueGVK)
	q.SetName(queue)
	q.Object["spec"] = map[string]any{"weight": int64(1)}
	if err := s.env.Client.Create(ctx, q); err != nil {
		t.Fatalf("create Queue: %v", err)
	}
	for _, state := range []string{"Closed", "Open"} {
		q.Object["status"] = map[string]any{"state": state}
		if err := s.env.Client.Status().Update(ctx, q); err != nil {
			t.Fatalf("set the Queue %s: %v", state, err)
		}
		envtest.WaitFor(t, 20*time.Second, "Mandate to see the Queue "+state, func() bool {
			return s.srv.Service.SchedulerObjects.Lookup(cluster.VolcanoQueueGVK, "", queue).State == state
		})
		warnings.reset()
		if err := c.Create(ctx, object(t, fmt.Sprintf(visionOneNode, "detr-"+strings.ToLower(state))), client.DryRunAll); err != nil {
			t.Fatalf("create with the Queue %s: %v", state, err)
		}
		got := queueWarnings()
		switch state {
		case "Closed":
			want := "Volcano queue research-vision is Closed: the job will wait until it is Open; run `mandate sync`"
			if len(got) != 1 || got[0] != want {
				t.Errorf("warnings about a Closed queue = %q, want [%q]", got, want)
			}
		case "Open":
			if len(got) != 0 {
				t.Errorf("warnings about an Open queue = %q, want none", got)
			}
		}
	}
}

// assertGangAffinity checks that the pod template at path inside obj
// carries the gang label and the required pod affinity among the gang's
// pods on kubernetes.io/hostname.
func assertGangAffinity(t *testing.T, obj map[string]any, gang string, path ...string) {
	t.Helper()
	label, _, _ := unstructured.NestedString(obj, append(append([]string(nil), path...), "metadata", "labels", scheduler.LabelGang)...)
	if label != gang {
		t.Errorf("%s: label %s = %q, want %q", strings.Join(path, "."), scheduler.LabelGang, label, gang)
	}
	terms, _, _ := unstructured.NestedSlice(obj, append(append([]string(nil), path...),
		"spec", "affinity", "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution")...)
	if len(terms) != 1 {
		t.Fatalf("%s: %d required pod affinity terms stored, want 1", strings.Join(path, "."), len(terms))
	}
	term := terms[0].(map[string]any)
	match, _, _ := unstructured.NestedStringMap(term, "labelSelector", "matchLabels")
	if term["topologyKey"] != "kubernetes.io/hostname" || match[scheduler.LabelGang] != gang || len(match) != 1 {
		t.Errorf("%s: stored pod affinity term %v, want the gang %s on kubernetes.io/hostname", strings.Join(path, "."), term, gang)
	}
}

// A KAI tenant's PyTorchJob of 4 GPUs in all: required on one node, which
// KAI is told through its Topology's kubernetes.io/hostname level.
const platformOneNode = `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: %s, namespace: platform}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          priorityClassName: build
          containers:
          - {name: pytorch, image: vit, resources: {limits: {nvidia.com/gpu: "2"}}}
    Worker:
      replicas: 1
      template:
        spec:
          priorityClassName: build
          containers:
          - {name: pytorch, image: vit, resources: {limits: {nvidia.com/gpu: "2"}}}
`

// TestLevelsReachKAI: a KAI tenant's job warns while its KAI Queue or the
// Topology it names is missing, and while that Topology has no level on
// the required level's node label; once both exist with the level, it
// does not.
func TestLevelsReachKAI(t *testing.T) {
	s := start(t)
	s.populate(t)
	ctx := context.Background()
	warnings := &warningRecorder{}
	cfg := rest.CopyConfig(s.env.Config)
	cfg.WarningHandlerWithContext = warnings
	c, err := client.New(cfg, client.Options{Scheme: s.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	admit := func() []string {
		t.Helper()
		n++
		warnings.reset()
		if err := c.Create(ctx, object(t, fmt.Sprintf(platformOneNode, fmt.Sprintf("vit-%d", n))), client.DryRunAll); err != nil {
			t.Fatalf("create: %v", err)
		}
		var out []string
		for _, w := range warnings.get() {
			if strings.HasSuffix(w, "run `mandate sync`") {
				out = append(out, w)
			}
		}
		return out
	}
	assertWarnings := func(what string, got, want []string) {
		t.Helper()
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: warnings = %q, want %q", what, got, want)
		}
	}
	assertWarnings("nothing exists", admit(), []string{
		"KAI queue platform does not exist: the job will wait until it does; run `mandate sync`",
		"KAI topology helix-fabric does not exist: KAI will not place the job until it does; run `mandate sync`",
	})

	queue := &unstructured.Unstructured{}
	queue.SetGroupVersionKind(cluster.KAIQueueGVK)
	queue.SetName("platform")
	queue.Object["spec"] = map[string]any{}
	topo := &unstructured.Unstructured{}
	topo.SetGroupVersionKind(cluster.KAITopologyGVK)
	topo.SetName("helix-fabric")
	topo.Object["spec"] = map[string]any{"levels": []any{map[string]any{"nodeLabel": "nvidia.com/gpu.clique"}}}
	for _, o := range []client.Object{queue, topo} {
		if err := s.env.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %s: %v", o.GetObjectKind().GroupVersionKind().Kind, err)
		}
	}
	envtest.WaitFor(t, 20*time.Second, "Mandate to see the KAI Queue and Topology", func() bool {
		return s.srv.Service.SchedulerObjects.Lookup(cluster.KAIQueueGVK, "", "platform").Presence == cluster.Present &&
			s.srv.Service.SchedulerObjects.Lookup(cluster.KAITopologyGVK, "", "helix-fabric").Presence == cluster.Present
	})
	assertWarnings("a Topology without the node level", admit(), []string{
		"KAI topology helix-fabric has no level on node label kubernetes.io/hostname: the required topology level node is advisory for KAI; run `mandate sync`",
	})

	// A Topology's levels are immutable: replace it.
	if err := s.env.Client.Delete(ctx, topo); err != nil {
		t.Fatalf("delete Topology: %v", err)
	}
	envtest.WaitFor(t, 20*time.Second, "Mandate to see the Topology gone", func() bool {
		return s.srv.Service.SchedulerObjects.Lookup(cluster.KAITopologyGVK, "", "helix-fabric").Presence == cluster.Missing
	})
	topo = &unstructured.Unstructured{}
	topo.SetGroupVersionKind(cluster.KAITopologyGVK)
	topo.SetName("helix-fabric")
	topo.Object["spec"] = map[string]any{"levels": []any{
		map[string]any{"nodeLabel": "nvidia.com/gpu.clique"}, map[string]any{"nodeLabel": "kubernetes.io/hostname"},
	}}
	if err := s.env.Client.Create(ctx, topo); err != nil {
		t.Fatalf("create Topology: %v", err)
	}
	envtest.WaitFor(t, 20*time.Second, "Mandate to see the Topology's node level", func() bool {
		return len(s.srv.Service.SchedulerObjects.Lookup(cluster.KAITopologyGVK, "", "helix-fabric").NodeLabels) == 2
	})
	assertWarnings("Queue and Topology with the level", admit(), nil)
}
