package authoritymetrics_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/authoritymetrics"
	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/clusterreport"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/explain"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/topology/topologytest"
)

// gangPods is the size of each running Job the test creates.
const gangPods = 8

// TestFromClusterKeepsWhatIsCounted: on a real API server holding running
// Jobs of 8 one-GPU pods (as the Job controller makes them: labels,
// controller reference, bound, Running) and pending Jobs without pods,
// the report serve's loop computes (FromCluster: stripped pods and nodes,
// only pod-less workloads decided) equals, field for field, the report of
// the whole cluster listed as unstructured objects with every workload
// decided (what `mandate report` computes); and it holds and allocates a
// fraction of it per pod. AUTHMETRICS_RUNNING_PODS sets the number of
// running pods (default 256).
func TestFromClusterKeepsWhatIsCounted(t *testing.T) {
	pods := 256
	if v := os.Getenv("AUTHMETRICS_RUNNING_PODS"); v != "" {
		var err error
		pods, err = strconv.Atoi(v)
		require.NoError(t, err)
	}
	env := envtest.Start(t)
	ctx := context.Background()
	c := env.Client
	require.NoError(t, fixtures.CreatePriorityClasses(ctx, c))
	namespaces := []string{}
	for ns, tenant := range fixtures.Tenants() {
		require.NoError(t, c.Create(ctx, fixtures.TenantNamespace(ns, tenant)))
		namespaces = append(namespaces, ns)
	}
	nodes := (pods + 7) / 8
	for i := range nodes + 4 { // four nodes stay free
		require.NoError(t, fixtures.CreateNode(ctx, c, fixtures.H100Node(fmt.Sprintf("h100-%05d", i), fmt.Sprintf("b%d", i/32), fmt.Sprintf("c%d", i/4))))
	}
	for j := 0; j*gangPods < pods; j++ {
		ns := namespaces[j%len(namespaces)]
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("train-%d", j)},
			Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](gangPods), Completions: ptr.To[int32](gangPods),
				Template: corev1.PodTemplateSpec{Spec: topologytest.GPUPod(ns, "", 1).Spec}},
		}
		job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		require.NoError(t, c.Create(ctx, job))
		for i := 0; i < gangPods && j*gangPods+i < pods; i++ {
			n := j*gangPods + i
			p := topologytest.GPUPod(ns, fmt.Sprintf("train-%d-%d", j, i), 1, topologytest.OnNode(fmt.Sprintf("h100-%05d", n/8)))
			p.Labels = map[string]string{"batch.kubernetes.io/job-name": job.Name, "job-name": job.Name,
				"batch.kubernetes.io/controller-uid": string(job.UID), "controller-uid": string(job.UID),
				"batch.kubernetes.io/job-completion-index": strconv.Itoa(i)}
			p.Annotations = map[string]string{"batch.kubernetes.io/job-completion-index": strconv.Itoa(i)}
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
			require.NoError(t, c.Create(ctx, p))
			p.Status.Phase = corev1.PodRunning
			require.NoError(t, c.Status().Update(ctx, p))
		}
	}
	for _, doc := range []string{fixtures.PlatformTooBig, fixtures.VisionSweep} {
		job := &batchv1.Job{}
		require.NoError(t, yaml.Unmarshal([]byte(doc), job))
		require.NoError(t, c.Create(ctx, job))
	}
	ev := fixtures.Evaluator(t, "embedded", nil)

	// What the loop computed before: the whole cluster, unstructured,
	// every workload decided.
	whole := func(ctx context.Context) (*clusterreport.Report, error) {
		inv, err := inventory.List(ctx, c, "cluster")
		if err != nil {
			return nil, err
		}
		sched, err := explain.ListSchedulerState(ctx, c, "")
		if err != nil {
			return nil, err
		}
		return clusterreport.Build(ctx, inv, sched, clusterreport.Options{
			Options: explain.Options{Decider: ev, Model: ev.Model(), Revision: ev.Revision()},
		})
	}
	counted := authoritymetrics.FromCluster(c, func() *evaluator.Evaluator { return ev }, nil)

	want, err := whole(ctx)
	require.NoError(t, err)
	got, err := counted(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// Inside serve the report reads the Pods and Nodes its informers
	// hold (PodFacts, stripped Nodes), not a listing: the same report.
	informers, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme, ByObject: cluster.StripTransforms()})
	require.NoError(t, err)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	_, err = informers.GetInformer(cctx, &corev1.Pod{})
	require.NoError(t, err)
	go func() { _ = informers.Start(cctx) }()
	require.True(t, informers.WaitForCacheSync(cctx))
	heldPods := 0
	fromServe := authoritymetrics.FromClusterHeld(c, func(ctx context.Context) ([]*cluster.PodFacts, []*corev1.Node, bool) {
		pods, ok := cluster.HeldPods(ctx, informers)
		var nodes corev1.NodeList
		if !ok || informers.List(ctx, &nodes) != nil {
			return nil, nil, false
		}
		heldPods = len(pods)
		var out []*corev1.Node
		for i := range nodes.Items {
			out = append(out, cluster.StripNode(&nodes.Items[i]))
		}
		return pods, out, true
	}, func() *evaluator.Evaluator { return ev }, nil)
	got, err = fromServe(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, pods, heldPods, "the report read the informer's pods")
	// The report is about something: the running pods are counted, the
	// pending Jobs listed as blocked, the free nodes idle.
	used := 0
	for _, row := range got.Capacity {
		used += row.Used
	}
	assert.Equal(t, pods, used)
	assert.Equal(t, 2, got.BlockedWorkloads, "%+v", got.Blocked)
	assert.Equal(t, 32+nodes*8-pods, got.IdleGPUs)

	// What one report allocates, and what its inventory holds, per pod.
	allocated := func(report func(context.Context) (*clusterreport.Report, error)) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := report(ctx)
		require.NoError(t, err)
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / uint64(pods)
	}
	held := func(list func(context.Context, client.Reader, string) (*inventory.Inventory, error)) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		inv, err := list(ctx, c, "cluster")
		require.NoError(t, err)
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(inv)
		return (after.HeapAlloc - before.HeapAlloc) / uint64(pods)
	}
	allocWhole, allocCounted := allocated(whole), allocated(counted)
	heldWhole, heldCounted := held(inventory.List), held(inventory.ListCounted)
	t.Logf("%d running pods, %d nodes: one report allocates %d B/pod (whole cluster, every workload decided) → %d B/pod (counted only); "+
		"its inventory holds %d B/pod → %d B/pod", pods, nodes+4, allocWhole, allocCounted, heldWhole, heldCounted)
	assert.Less(t, allocCounted, allocWhole/2, "a report allocates less than half of what it did per pod")
	assert.Less(t, heldCounted, heldWhole/4, "the inventory holds less than a quarter of what it did per pod")
}
