package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/authoritymetrics"
	"github.com/mandate-dev/mandate/clusterreport"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/explain"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// createFixture creates explain's fixture in a real API server: priority
// classes, namespaces, nodes with their capacity and conditions, the
// pending owners, the running pods bound to their nodes with their phase,
// and the schedulers' queues (a Volcano queue's state through its status).
func createFixture(t *testing.T, c client.Client, path string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, fixtures.CreatePriorityClasses(ctx, c))
	inv, err := inventory.ReadSnapshot(path)
	require.NoError(t, err)
	for _, ns := range inv.Namespaces {
		if err := c.Create(ctx, ns.DeepCopy()); !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, ns.GetName())
		}
	}
	for _, n := range inv.Nodes {
		node := &corev1.Node{}
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(n.Object, node), n.GetName())
		require.NoError(t, fixtures.CreateNode(ctx, c, node))
	}
	for _, o := range inv.Owners {
		obj := o.DeepCopy()
		delete(obj.Object, "status")
		require.NoError(t, c.Create(ctx, obj), o.GetName())
	}
	for _, p := range inv.Pods {
		obj := p.DeepCopy()
		phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
		delete(obj.Object, "status")
		require.NoError(t, c.Create(ctx, obj), p.GetName())
		require.NoError(t, unstructured.SetNestedField(obj.Object, phase, "status", "phase"))
		require.NoError(t, c.Status().Update(ctx, obj), p.GetName())
	}
	sched, err := explain.ReadSchedulerState(mustOpen(t, path))
	require.NoError(t, err)
	for _, q := range sched.Objects {
		obj := q.DeepCopy()
		status, hasStatus, _ := unstructured.NestedMap(obj.Object, "status")
		delete(obj.Object, "status")
		require.NoError(t, c.Create(ctx, obj), q.GetName())
		if hasStatus {
			require.NoError(t, unstructured.SetNestedMap(obj.Object, status, "status"))
			require.NoError(t, c.Status().Update(ctx, obj), q.GetName())
		}
	}
}

// TestExplainAndReportLive: on a real API server loaded with the example
// cluster and the pending workloads of each blocking kind (with the real
// Volcano and KAI Queue CRDs), explain names each one's rule with limit,
// current value and the change that unblocks it, with the exit status
// explain promises; report's counts match the hand-computed fixture.
func TestExplainAndReportLive(t *testing.T) {
	env := envtest.Start(t, envtest.WithPyTorchJobCRD())
	createFixture(t, env.Client, explainSnapshot(t))
	kubeconfig := env.WriteKubeconfig(t, "explainer")

	for _, tc := range []struct {
		target, namespace, wantCode, wantDimension string
	}{
		{"job/ci-ceiling", "platform", "QUOTA_CEILING_BUSY", "quota"},
		{"job/pretrain-13b", "llm", "TOPOLOGY_NEVER_FITS", "topology"},
		{"pytorchjob/llama-finetune", "llm", "TOPOLOGY_WAITS", "topology"},
		{"job/gb200-eval", "llm", "TOPOLOGY_NEVER_FITS", "topology"},
		{"job/vit-sweep-lr", "vision", "QUEUE_CLOSED", "scheduler"},
		{"job/rerank-distill", "product", "QUEUE_MISSING", "scheduler"},
		{"job/detr-urgent", "vision", "PRIORITY_NOT_ALLOWED", "priority"},
		{"job/llm-small", "llm", "", ""},
	} {
		t.Run(tc.target, func(t *testing.T) {
			code, out, errText := run(t, "explain", tc.target, "-n", tc.namespace, "--kubeconfig", kubeconfig, "-o", "json")
			var e explain.Explanation
			require.NoError(t, json.Unmarshal([]byte(out), &e), "%s%s", out, errText)
			if tc.wantCode == "" {
				assert.Equal(t, exitAdmitted, code, errText)
				assert.True(t, e.CanRunNow, "%+v", e.Blocks)
				return
			}
			assert.Equal(t, exitDenied, code, errText)
			require.NotEmpty(t, e.Blocks)
			b := e.Blocks[0]
			assert.Equal(t, tc.wantCode, b.Code)
			assert.Equal(t, tc.wantDimension, b.Dimension)
			assert.NotEmpty(t, b.Limit)
			assert.NotEmpty(t, b.Current)
			assert.NotEmpty(t, b.Unblock)
		})
	}
	code, _, _ := run(t, "explain", "job/nope", "-n", "llm", "--kubeconfig", kubeconfig)
	assert.Equal(t, exitBadInput, code)

	code, out, errText := run(t, "report", "--kubeconfig", kubeconfig, "-o", "json")
	require.Equal(t, exitDenied, code, errText)
	var rep clusterreport.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.Equal(t, []int{212, 30, 16, 7, 208}, []int{rep.IdleGPUs, rep.StrandedGPUs, rep.UnhealthyGPUs, rep.BlockedWorkloads, rep.BlockedGPUs})
	assert.Equal(t, map[string]int{"topology": 168, "quota": 16, "scheduler": 16, "priority": 8}, rep.BlockedBy)

	// What serve's authority-metrics loop publishes, from the same API
	// server, scraped from the registry /metrics serves.
	p, err := loadPolicy("")
	require.NoError(t, err)
	ev, err := evaluator.New(context.Background(), p, evaluator.Options{})
	require.NoError(t, err)
	loop := &authoritymetrics.Loop{Report: authoritymetrics.FromCluster(env.Client, func() *evaluator.Evaluator { return ev }, nil)}
	require.NoError(t, loop.Once(context.Background()))
	require.NoError(t, testutil.GatherAndCompare(metrics.Registry, strings.NewReader(`
# HELP mandate_idle_gpus Free GPUs on healthy, schedulable nodes.
# TYPE mandate_idle_gpus gauge
mandate_idle_gpus 212
# HELP mandate_stranded_gpus Free GPUs no blocked gang could use at its required topology level.
# TYPE mandate_stranded_gpus gauge
mandate_stranded_gpus 30
# HELP mandate_unhealthy_gpus GPUs on nodes the authority model's health rules mark unhealthy.
# TYPE mandate_unhealthy_gpus gauge
mandate_unhealthy_gpus 16
`), "mandate_idle_gpus", "mandate_stranded_gpus", "mandate_unhealthy_gpus"))
	assert.Equal(t, 16.0, blockedGPUs(t, "quota"))
	assert.Equal(t, 168.0, blockedGPUs(t, "topology"))
}

// blockedGPUs reads one mandate_blocked_gpus series from the registry.
func blockedGPUs(t *testing.T, dimension string) float64 {
	t.Helper()
	mfs, err := metrics.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "mandate_blocked_gpus" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == dimension {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no mandate_blocked_gpus{dimension=%q}", dimension)
	return 0
}
