package cli

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/schedsync"
	"github.com/mandate-dev/mandate/test/envtest"
)

// The Volcano chart's stock scheduler configuration: it never reclaims nor
// preempts, and gang's preemptable veto is off.
const stockVolcanoConf = `actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
`

// TestSyncVolcanoConfigLive is issue 32's acceptance for Volcano's
// scheduler configuration, on a real API server: `mandate sync --check`
// exits 1 with the reason on a configuration that never reclaims or would
// evict gangs pod by pod, and 0 after sync; a ConfigMap the Volcano chart
// owns is vetted and never written.
func TestSyncVolcanoConfigLive(t *testing.T) {
	env := envtest.Start(t)
	ctx := context.Background()
	c := env.Client
	kubeconfig := env.WriteKubeconfig(t, "sync-volcano")
	sync := func(args ...string) (int, string, string) {
		t.Helper()
		return run(t, append([]string{"sync", "--kubeconfig", kubeconfig, "--schedulers=volcano"}, args...)...)
	}
	key := client.ObjectKey{Namespace: schedsync.DefaultVolcanoConfigNamespace, Name: schedsync.DefaultVolcanoConfigName}
	conf := func() *corev1.ConfigMap {
		t.Helper()
		cm := &corev1.ConfigMap{}
		require.NoError(t, c.Get(ctx, key, cm))
		return cm
	}
	setConf := func(text string) {
		t.Helper()
		cm := conf()
		cm.Data[schedsync.VolcanoConfigKey] = text
		require.NoError(t, c.Update(ctx, cm, client.FieldOwner("kubectl-edit")))
	}

	t.Run("the chart's own ConfigMap is vetted, never written", func(t *testing.T) {
		helm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "Helm"},
			Annotations: map[string]string{"meta.helm.sh/release-name": "volcano"}},
			Data: map[string]string{schedsync.VolcanoConfigKey: stockVolcanoConf, "other": "kept"}}
		require.NoError(t, c.Create(ctx, helm))

		code, out, _ := sync("--check")
		require.Equal(t, 1, code, out)
		assert.Regexp(t, `foreign +ConfigMap +volcano-system +volcano-scheduler-configmap +.*not labelled as Mandate's`, out)
		assert.Contains(t, out, "never reclaims")
		assert.Contains(t, out, "evicts gangs pod by pod")
		// --diff shows what to set where it is installed from.
		code, out, _ = sync("--diff")
		require.Equal(t, 0, code, out)
		assert.Contains(t, out, "! ConfigMap volcano-system/volcano-scheduler-configmap (foreign)")
		assert.Contains(t, out, "# the model wants data.volcano-scheduler.conf:\n    #   # Rendered by mandate sync")
		assert.Contains(t, out, `    #   actions: "enqueue, allocate, preempt, reclaim, backfill"`)

		code, out, errText := sync()
		require.Equal(t, 0, code, errText)
		assert.Contains(t, out, "never reclaims", "sync reports what it leaves alone")
		cm := conf()
		assert.Equal(t, stockVolcanoConf, cm.Data[schedsync.VolcanoConfigKey], "the chart's configuration is not written")
		assert.Equal(t, "Helm", cm.Labels["app.kubernetes.io/managed-by"])
		for _, m := range cm.ManagedFields {
			assert.NotEqual(t, schedsync.FieldManager, m.Manager)
		}
		code, _, _ = sync("--check")
		assert.Equal(t, 1, code, "still drift: sync does not take the chart's object")

		// Fixed where it is installed from: a configuration of its own
		// that keeps the promise is no drift, however it is written.
		setConf(`actions: "enqueue,allocate,preempt,reclaim,backfill"
tiers:
- plugins: [{name: conformance}, {name: gang}, {name: priority}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
`)
		code, out, _ = sync("--check")
		assert.Equal(t, 0, code, out)
		require.NoError(t, c.Delete(ctx, conf()))
	})

	t.Run("missing: --check exits 1, sync creates it, --check exits 0", func(t *testing.T) {
		code, out, _ := sync("--check")
		require.Equal(t, 1, code, out)
		assert.Regexp(t, `create +ConfigMap +volcano-system +volcano-scheduler-configmap`, out)
		code, _, errText := sync()
		require.Equal(t, 0, code, errText)
		cm := conf()
		assert.Equal(t, schedsync.RenderVolcanoConfig(), cm.Data[schedsync.VolcanoConfigKey])
		assert.Equal(t, config.ManagedBy, cm.Labels[config.LabelManagedBy])
		var appliers []string
		for _, m := range cm.ManagedFields {
			if m.Operation == metav1.ManagedFieldsOperationApply {
				appliers = append(appliers, m.Manager)
			}
		}
		assert.Equal(t, []string{schedsync.FieldManager}, appliers, "server-side applied by mandate-sync")
		assert.Empty(t, schedsync.CheckVolcanoConfig(cm.Data[schedsync.VolcanoConfigKey], true))
		code, out, _ = sync("--check")
		assert.Equal(t, 0, code, out)
		assert.Empty(t, out)
	})

	for _, tc := range []struct{ name, conf, reason string }{
		{"no reclaim action", `actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: predicates}, {name: capacity}]
`, "never reclaims"},
		{"gang below the first tier", `actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins: [{name: priority}, {name: conformance}]
- plugins: [{name: gang}, {name: predicates}, {name: capacity}]
`, "evicts gangs pod by pod: the gang plugin is in tier 2"},
		{"gang's veto off", `actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enableReclaimable: false
  - name: conformance
- plugins: [{name: predicates}, {name: capacity}]
`, "enableReclaimable false"},
	} {
		t.Run("a hand edit, "+tc.name+": --check exits 1 with the reason, sync repairs it", func(t *testing.T) {
			setConf(tc.conf)
			code, out, _ := sync("--check")
			require.Equal(t, 1, code, out)
			assert.Regexp(t, `update +ConfigMap +volcano-system +volcano-scheduler-configmap`, out)
			assert.Contains(t, out, tc.reason)
			code, _, errText := sync()
			require.Equal(t, 0, code, errText)
			assert.Equal(t, schedsync.RenderVolcanoConfig(), conf().Data[schedsync.VolcanoConfigKey])
			code, out, _ = sync("--check")
			assert.Equal(t, 0, code, out)
		})
	}

	t.Run("another namespace and name, by flag", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "batch-system"}}))
		args := []string{"--volcano-config-namespace=batch-system", "--volcano-config-name=vc-scheduler"}
		code, out, _ := sync(append(args, "--check")...)
		require.Equal(t, 1, code, out)
		assert.Regexp(t, `create +ConfigMap +batch-system +vc-scheduler`, out)
		code, _, errText := sync(args...)
		require.Equal(t, 0, code, errText)
		cm := &corev1.ConfigMap{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "batch-system", Name: "vc-scheduler"}, cm))
		assert.Equal(t, schedsync.RenderVolcanoConfig(), cm.Data[schedsync.VolcanoConfigKey])
	})
}
