package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/schedsync"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// TestServeSyncFollowsBundleRevisions: with sync.enabled, serve configures
// the schedulers from the first revision, and a new bundle revision with
// one ceiling changed reshapes that tenant's queues at once — the sync
// interval is an hour, so only the activation can have done it. The drift
// gauge is 0 after the applies are counted.
func TestServeSyncFollowsBundleRevisions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bundle.tar.gz")
	publish := func(revision string, ceiling int) {
		dir := fixtures.PolicyDir(t, func(model map[string]any) {
			tenants := model["tenants"].(map[string]any)
			tenants["research-vision"].(map[string]any)["quota"].(map[string]any)["nvidia.com/gpu"].(map[string]any)["ceiling"] = ceiling
		})
		b, err := bundles.Build(context.Background(), dir, bundles.BuildOptions{Revision: revision})
		if err != nil {
			t.Fatal(err)
		}
		if err := bundles.WriteFile(path+".tmp", b); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	publish("sync-1", 64)
	s := startWith(t, startOptions{config: func(c *config.Serve) {
		c.Bundle.Source, c.Bundle.Interval = path, 200*time.Millisecond
		c.Sync = config.Sync{Enabled: true, Interval: time.Hour, Mode: config.SyncApply, Schedulers: []string{"volcano", "kai"}}
	}})
	ctx := context.Background()
	// The sync's Lease lives in Mandate's namespace, which the suite
	// creates.
	capability := func() string {
		q := &unstructured.Unstructured{}
		q.SetGroupVersionKind(schedsync.VolcanoQueueKind.GVK)
		if err := s.env.Client.Get(ctx, types.NamespacedName{Name: "research-vision"}, q); err != nil {
			return err.Error()
		}
		v, _, _ := unstructured.NestedString(q.Object, "spec", "capability", "nvidia.com/gpu")
		return v
	}
	envtest.WaitFor(t, 60*time.Second, "the sync to create the Volcano queue of research-vision from revision sync-1",
		func() bool { return capability() == "64" })
	pc := &unstructured.Unstructured{}
	pc.SetGroupVersionKind(schedsync.PriorityClassKind.GVK)
	if err := s.env.Client.Get(ctx, types.NamespacedName{Name: "train"}, pc); err != nil {
		t.Fatalf("the PriorityClass of tier train: %v", err)
	}

	publish("sync-2", 48)
	envtest.WaitFor(t, 60*time.Second, "revision sync-2 to reshape research-vision's Volcano queue",
		func() bool { return capability() == "48" })
	// One reconciliation applies the objects one by one: the KAI queue may
	// follow the Volcano one a moment later.
	kaiLimit := func() any {
		kai := &unstructured.Unstructured{}
		kai.SetGroupVersionKind(schedsync.KAIQueueKind.GVK)
		if err := s.env.Client.Get(ctx, types.NamespacedName{Name: "research-vision"}, kai); err != nil {
			return err
		}
		limit, _, _ := unstructured.NestedFieldNoCopy(kai.Object, "spec", "resources", "gpu", "limit")
		return limit
	}
	envtest.WaitFor(t, 60*time.Second, "revision sync-2 to reshape research-vision's KAI queue (limit 48)",
		func() bool { return kaiLimit() == int64(48) })

	var creates, updates, drift float64
	syncMetrics := func() {
		creates, updates, drift = 0, 0, 0
		families, err := metrics.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				switch f.GetName() {
				case "mandate_sync_applies_total":
					for _, l := range m.GetLabel() {
						if l.GetValue() == "create" {
							creates += m.GetCounter().GetValue()
						}
						if l.GetValue() == "update" {
							updates += m.GetCounter().GetValue()
						}
					}
				case "mandate_sync_drift_objects":
					drift += m.GetGauge().GetValue()
				}
			}
		}
	}
	// The metrics are set when the reconciliation ends.
	envtest.WaitFor(t, 60*time.Second, "the reconciliation of revision sync-2 to be counted", func() bool {
		syncMetrics()
		return updates >= 2 && drift == 0
	})
	if creates == 0 || updates < 2 || drift != 0 {
		t.Errorf("metrics: %v creates, %v updates (want the two queues at least), drift %v (want 0)", creates, updates, drift)
	}
}
