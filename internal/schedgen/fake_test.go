package schedgen_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/internal/schedgen"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/schedsync"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/workload"
)

// fake is a scheduler of this test's own: one registration of its facts.
var fake = facts.Scheduler{
	Name:          "fake",
	Title:         "Fake",
	SchedulerName: "fake-scheduler",
	Queue:         facts.Key{Name: "fake.example/queue", Place: facts.Label},
	QueueKind: &facts.QueueKind{Kind: facts.Kind{
		GVK: schema.GroupVersionKind{Group: "fake.example", Version: "v1", Kind: "Queue"}, Resource: "queues"}},
	SyncKinds: []facts.SyncKind{{Kind: facts.Kind{
		GVK: schema.GroupVersionKind{Group: "fake.example", Version: "v1", Kind: "Queue"}, Resource: "queues"}, Queue: true}},
}

// renderFake is its adapter: the queue label on the object, the scheduler
// name on its pods, through the same template walk as every adapter.
func renderFake(obj *unstructured.Unstructured, w workload.Workload, d evaluator.Directives) error {
	common, err := scheduler.For(facts.Default.Name)
	if err != nil {
		return err
	}
	if err := common.Apply(obj, w, d); err != nil {
		return err
	}
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[fake.Queue.Name] = d.Queue
	obj.SetLabels(labels)
	return unstructured.SetNestedField(obj.Object, fake.SchedulerName, "spec", "template", "spec", "schedulerName")
}

// syncFake is its sync renderer: one Queue per tenant.
func syncFake(s model.Model, _ schedsync.Cluster, _ schedsync.Options) ([]schedsync.Object, error) {
	var out []schedsync.Object
	for _, t := range s.TenantNames() {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetGroupVersionKind(fake.QueueKind.GVK)
		u.SetName(s.QueueName(t))
		out = append(out, schedsync.Object{Unstructured: u})
	}
	return out, nil
}

// noObjects is a cluster that watches every kind and holds nothing.
type noObjects struct{}

func (noObjects) Lookup(schema.GroupVersionKind, string, string) cluster.SchedulerObject {
	return cluster.SchedulerObject{Presence: cluster.Missing}
}

// TestAFakeSchedulerIsOneRegistration: a scheduler registered once in the
// facts table, with its render and sync functions, is decided, rendered,
// checked for its queue and synced through the registry with nothing else
// changed — and the generated schema enum and chart RBAC then differ from
// the files in the repository, which is what the drift test catches.
func TestAFakeSchedulerIsOneRegistration(t *testing.T) {
	facts.Register(fake)
	scheduler.Register(fake.Name, renderFake)
	schedsync.Register(fake.Name, schedsync.Sync{Render: syncFake})
	t.Cleanup(func() {
		schedsync.Unregister(fake.Name)
		scheduler.Unregister(fake.Name)
		facts.Unregister(fake.Name)
	})

	ev := fixtures.Evaluator(t, "test", func(model map[string]any) {
		model["tenants"].(map[string]any)["product"].(map[string]any)["scheduler"] = fake.Name
	})
	state, err := cluster.New(ev.Model())
	require.NoError(t, err)
	require.NoError(t, state.LoadFile("../../examples/cluster.yaml"))
	svc := &review.Service{Decider: ev, State: state, SchedulerObjects: noObjects{}}
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "tuned", "namespace": "product"},
		"spec": map[string]any{"parallelism": int64(1), "completions": int64(1),
			"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
				"containers": []any{map[string]any{"name": "c", "image": "x",
					"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": "1"}}}}}}},
	}}
	rv, err := svc.Review(context.Background(), job, evaluator.Request{Operation: "CREATE", UID: "u-1"})
	require.NoError(t, err)
	require.True(t, rv.Decision.Allowed, "%v", rv.Decision.Violations)
	assert.Equal(t, fake.Name, rv.Decision.Directives.Scheduler)
	assert.Equal(t, "product", rv.Mutated.GetLabels()[fake.Queue.Name], "rendered by the fake's adapter")
	name, _, _ := unstructured.NestedString(rv.Mutated.Object, "spec", "template", "spec", "schedulerName")
	assert.Equal(t, fake.SchedulerName, name)
	assert.Contains(t, rv.Decision.Warnings, "Fake queue product does not exist: the job will wait until it does; run `mandate sync`",
		"its queue is checked through the registry")
	assert.True(t, strings.HasPrefix(scheduler.PlacementOf(rv.Decision.Directives).String(), fake.SchedulerName+" "))

	spec, err := model.FromData(ev.Data())
	require.NoError(t, err)
	assert.Contains(t, schedsync.AllSchedulers(), fake.Name)
	objs, err := schedsync.Render(spec, schedsync.Cluster{}, schedsync.Options{Schedulers: []string{fake.Name}})
	require.NoError(t, err)
	var queues []string
	for _, o := range objs {
		if o.GroupVersionKind() == fake.QueueKind.GVK {
			queues = append(queues, o.GetName())
		}
	}
	assert.Contains(t, queues, "product", "synced by the fake's renderer")

	root := filepath.Join("..", "..")
	files, err := schedgen.Generate(root)
	require.NoError(t, err)
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join(root, path))
		require.NoError(t, err)
		assert.NotEqual(t, string(want), string(got), "%s: the drift test must see the new scheduler missing", path)
	}
	assert.Contains(t, string(files[schedgen.SchemaFile]), `"enum": ["volcano", "kai", "kueue", "default", "slurm", "fake"]`)
	assert.Contains(t, string(files[schedgen.ChartFile]), `- apiGroups: ["fake.example"]`)
}

// TestEverySchedulerIsIntegrated: each scheduler of the facts table has an
// adapter, and each that sync configures a sync renderer.
func TestEverySchedulerIsIntegrated(t *testing.T) {
	for _, s := range facts.All() {
		_, ok := scheduler.Lookup(s.Name)
		assert.True(t, ok, "%s has no adapter: scheduler.Register it beside its render function", s.Name)
		if s.Syncs() {
			assert.Contains(t, schedsync.AllSchedulers(), s.Name, "%s has sync kinds but no schedsync.Register", s.Name)
		}
	}
	assert.Equal(t, facts.SyncNames(), schedsync.AllSchedulers())
}
