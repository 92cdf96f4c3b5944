package schedsync

import (
	"context"
	"encoding/json"
	"io/fs"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/test/envtest"
)

// TestReconcilerReportThenApply: in report mode the reconciler writes
// nothing and the drift gauge counts what differs; in apply mode it
// creates it, counts the applies, and the gauge drops to 0.
func TestReconcilerReportThenApply(t *testing.T) {
	env := envtest.Start(t)
	ctx := context.Background()
	b, err := fs.ReadFile(policies.FS, "mandate/model/data.json")
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	m, err := model.Decode(doc)
	require.NoError(t, err)

	r := &Reconciler{Syncer: Syncer{Client: env.Client}, ReportOnly: true, Options: Options{Schedulers: []string{Volcano}}}
	require.Error(t, r.RunOnce(ctx), "no model yet")
	r.SetModel(m, "r1")
	queues := func() int {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(VolcanoQueueKind.GVK.GroupVersion().WithKind("QueueList"))
		require.NoError(t, env.Client.List(ctx, l))
		return len(l.Items)
	}
	gauge := func(kind string) float64 { return testutil.ToFloat64(driftObjects.WithLabelValues(kind)) }
	creates := testutil.ToFloat64(applies.WithLabelValues(string(Create)))

	require.NoError(t, r.RunOnce(ctx))
	assert.Equal(t, 0, queues(), "report mode writes nothing")
	assert.Equal(t, float64(6), gauge("Queue.scheduling.volcano.sh"), "the six tenants' queues are missing")
	assert.Equal(t, float64(6), gauge("PriorityClass.scheduling.k8s.io"), "and the classes: four tiers', two borrowed")
	assert.Equal(t, float64(1), gauge("ConfigMap"), "and Volcano's scheduler configuration")

	r.ReportOnly = false
	require.NoError(t, r.RunOnce(ctx))
	assert.Equal(t, 6, queues())
	assert.Equal(t, float64(0), gauge("Queue.scheduling.volcano.sh"))
	assert.Equal(t, float64(13), testutil.ToFloat64(applies.WithLabelValues(string(Create)))-creates, "6 queues, 6 classes and Volcano's scheduler ConfigMap created")
	assert.Equal(t, float64(0), gauge("ConfigMap"))

	r.ReportOnly = true
	require.NoError(t, r.RunOnce(ctx))
	assert.Equal(t, float64(0), gauge("Queue.scheduling.volcano.sh"), "in sync: no drift")

	// A hand edit of Volcano's configuration that never reclaims is drift
	// until the next apply, and no longer once applied.
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: DefaultVolcanoConfigNamespace, Name: DefaultVolcanoConfigName}
	require.NoError(t, env.Client.Get(ctx, key, cm))
	cm.Data[VolcanoConfigKey] = "actions: \"enqueue, allocate, backfill\"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n"
	require.NoError(t, env.Client.Update(ctx, cm))
	require.NoError(t, r.RunOnce(ctx))
	assert.Equal(t, float64(1), gauge("ConfigMap"), "the edit is drift")
	r.ReportOnly = false
	require.NoError(t, r.RunOnce(ctx))
	require.NoError(t, env.Client.Get(ctx, key, cm))
	assert.Equal(t, RenderVolcanoConfig(), cm.Data[VolcanoConfigKey])
	assert.Equal(t, float64(0), gauge("ConfigMap"), "repaired")
}
