package cli

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/schedsync"
	"github.com/mandate-dev/mandate/test/envtest"
)

var allSchedulers = "--schedulers=volcano,kai,kueue"

// TestSyncLive is issue 12's acceptance for mandate sync, on a real API
// server with the upstream Volcano, KAI and Kueue CRDs: sync creates every
// object from the example model and the schemas keep every field of it; a
// second run changes nothing; a new bundle revision with one ceiling
// changed updates exactly that tenant's queues; a removed tenant's queues
// are closed while they hold workloads and deleted when empty; a hand edit
// is reported by --check (exit 1) and repaired by sync.
func TestSyncLive(t *testing.T) {
	env := envtest.Start(t, envtest.WithKueueCRDs())
	ctx := context.Background()
	c := env.Client
	for _, n := range []struct{ name, zone, spine, block, clique string }{
		{"gpu-a1", "zone-a", "spine-1", "leaf-1", "clique-1"},
		{"gpu-a2", "zone-a", "spine-1", "leaf-1", "clique-1"},
		{"gpu-a3", "zone-a", "spine-1", "leaf-2", "clique-2"},
		{"gpu-b1", "zone-b", "spine-2", "leaf-3", ""}, // no NVLink clique
	} {
		labels := map[string]string{"topology.kubernetes.io/zone": n.zone, "mandate.dev/spine-block": n.spine,
			"mandate.dev/leaf-block": n.block, "kubernetes.io/hostname": n.name, "nvidia.com/gpu.present": "true"}
		if n.clique != "" {
			labels["nvidia.com/gpu.clique"] = n.clique
		}
		require.NoError(t, c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: labels}}))
	}
	for _, tenant := range []string{"research-llm", "research-vision", "product", "platform"} {
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: tenant, Labels: map[string]string{"mandate.dev/tenant": tenant}}}))
	}
	kubeconfig := env.WriteKubeconfig(t, "sync")
	sync := func(args ...string) (int, string, string) {
		t.Helper()
		return run(t, append([]string{"sync", "--kubeconfig", kubeconfig, allSchedulers}, args...)...)
	}

	example := readModel(t)
	desired := renderModel(t, c, example)
	kinds := map[string]int{}
	for _, o := range desired {
		kinds[o.GetKind()+"."+o.GroupVersionKind().Group]++
	}
	require.Len(t, kinds, 12, "every kind Sync manages is rendered from the example model, and Volcano's scheduler ConfigMap: %v", kinds)

	t.Run("dry run changes nothing", func(t *testing.T) {
		code, out, errText := sync("--dry-run")
		require.Equal(t, 0, code, errText)
		assert.Contains(t, out, "create  Queue.scheduling.volcano.sh")
		for _, o := range desired {
			assert.True(t, apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(o.Unstructured), live(o))), o.GetName())
		}
	})

	t.Run("creates every object; the schemas keep every field", func(t *testing.T) {
		code, out, errText := sync()
		require.Equal(t, 0, code, errText)
		assert.Equal(t, len(desired), strings.Count(out, "\ncreate "), out)
		for _, o := range desired {
			got := live(o)
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(o.Unstructured), got), "%s %s", o.GetKind(), o.GetName())
			assert.Empty(t, missingFields("", o.Object, got.Object), "%s %s: fields the API server dropped or changed", o.GetKind(), o.GetName())
			if o.GroupVersionKind() == schedsync.VolcanoQueueKind.GVK {
				state, _, _ := unstructured.NestedString(got.Object, "status", "state")
				assert.Equal(t, "Open", state, "Volcano queue %s", o.GetName())
			}
		}
		tiers := map[int64]int{}
		for _, o := range desired {
			if o.GroupVersionKind() == schedsync.HyperNodeKind.GVK {
				tier, _, _ := unstructured.NestedInt64(o.Object, "spec", "tier")
				tiers[tier]++
			}
		}
		assert.Equal(t, map[int64]int{1: 2, 2: 3, 3: 2, 4: 2}, tiers, "HyperNodes: 2 cliques, 3 leaf blocks, 2 spines, 2 zones")
	})

	t.Run("a second run changes nothing", func(t *testing.T) {
		before := versions(t, c, desired)
		code, out, errText := sync("--diff")
		require.Equal(t, 0, code, errText)
		assert.Empty(t, out)
		code, out, errText = sync("--check")
		require.Equal(t, 0, code, errText)
		assert.Empty(t, out)
		code, out, errText = sync()
		require.Equal(t, 0, code, errText)
		assert.Empty(t, out)
		assert.Equal(t, before, versions(t, c, desired))
	})

	t.Run("a changed ceiling updates exactly that tenant's queues", func(t *testing.T) {
		before := versions(t, c, desired)
		changed := editModel(t, example, func(m map[string]any) {
			quota(m, "research-vision")["ceiling"] = 48
		})
		bundle := filepath.Join(t.TempDir(), "r2.tar.gz")
		code, _, errText := run(t, "bundle", "build", changed, "-o", bundle, "--revision", "r2")
		require.Equal(t, 0, code, errText)

		code, out, errText := sync("--bundle", bundle, "--diff")
		require.Equal(t, 0, code, errText)
		assert.Contains(t, out, `spec.capability.nvidia.com/gpu: "64" -> "48"`)

		code, _, errText = sync("--bundle", bundle)
		require.Equal(t, 0, code, errText)
		after := versions(t, c, desired)
		var moved []string
		for k, v := range after {
			if before[k] != v {
				moved = append(moved, k)
			}
		}
		assert.ElementsMatch(t, []string{"Queue.scheduling.volcano.sh//research-vision", "Queue.scheduling.run.ai//research-vision",
			"ClusterQueue.kueue.x-k8s.io//research-vision"}, moved)
		vq := get(t, c, schedsync.VolcanoQueueKind.GVK, "", "research-vision")
		capGPU, _, _ := unstructured.NestedString(vq.Object, "spec", "capability", "nvidia.com/gpu")
		assert.Equal(t, "48", capGPU)
		kq := get(t, c, schedsync.KAIQueueKind.GVK, "", "research-vision")
		limit, _, _ := unstructured.NestedFieldNoCopy(kq.Object, "spec", "resources", "gpu", "limit")
		assert.EqualValues(t, 48, limit)
		assert.Contains(t, managers(kq), schedsync.FieldManager)
		code, out, _ = sync("--bundle", bundle, "--check")
		assert.Equal(t, 0, code, out)
	})

	t.Run("a tier's new value recreates its PriorityClass, which Kubernetes keeps immutable", func(t *testing.T) {
		revalued := editModel(t, example, func(m map[string]any) {
			m["priorities"].(map[string]any)["train"].(map[string]any)["value"] = 55
		})
		code, out, errText := sync("--policies", revalued, "--check")
		require.Equal(t, 1, code, errText)
		assert.Regexp(t, `recreate +PriorityClass.scheduling.k8s.io +- +train +.*may not be changed`, out)
		assert.Regexp(t, `update +WorkloadPriorityClass.kueue.x-k8s.io +- +train +value: 50 -> 55`, out)
		code, _, errText = sync("--policies", revalued)
		require.Equal(t, 0, code, errText)
		pc := get(t, c, schedsync.PriorityClassKind.GVK, "", "train")
		assert.EqualValues(t, 55, pc.Object["value"])
		code, _, errText = sync()
		require.Equal(t, 0, code, errText)
		pc = get(t, c, schedsync.PriorityClassKind.GVK, "", "train")
		assert.EqualValues(t, 50, pc.Object["value"])
	})

	t.Run("a removed tenant's queues close while they hold workloads and go when empty", func(t *testing.T) {
		for _, w := range []map[string]any{
			{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": map[string]any{"name": "pg", "namespace": "research-vision"},
				"spec": map[string]any{"minMember": int64(1), "queue": "research-vision"}},
			{"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "metadata": map[string]any{"name": "pg", "namespace": "research-vision"},
				"spec": map[string]any{"minMember": int64(1), "queue": "research-vision"}},
			{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": map[string]any{"name": "wl", "namespace": "research-vision"},
				"spec": map[string]any{"queueName": "research-vision", "podSets": []any{map[string]any{"name": "main", "count": int64(1),
					"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}}}}},
		} {
			require.NoError(t, c.Create(ctx, &unstructured.Unstructured{Object: w}), w["kind"])
		}
		removed := editModel(t, example, func(m map[string]any) {
			tenants := m["tenants"].(map[string]any)
			delete(tenants, "research-vision")
			delete(tenants, "platform")
		})
		code, out, errText := sync("--policies", removed, "--check")
		require.Equal(t, 1, code, errText)
		assert.Regexp(t, `close +Queue.scheduling.volcano.sh +- +research-vision .*holds 1 workload`, out)
		assert.Regexp(t, `delete +Queue.scheduling.volcano.sh +- +platform `, out)

		code, _, errText = sync("--policies", removed)
		require.Equal(t, 0, code, errText)
		vq := get(t, c, schedsync.VolcanoQueueKind.GVK, "", "research-vision")
		state, _, _ := unstructured.NestedString(vq.Object, "status", "state")
		assert.Equal(t, "Closed", state)
		kq := get(t, c, schedsync.KAIQueueKind.GVK, "", "research-vision")
		limit, _, _ := unstructured.NestedFieldNoCopy(kq.Object, "spec", "resources", "gpu", "limit")
		assert.EqualValues(t, 0, limit)
		for _, gvk := range []struct {
			g  schema.GroupVersionKind
			ns string
		}{{schedsync.ClusterQueueKind.GVK, ""}, {schedsync.LocalQueueKind.GVK, "research-vision"}} {
			q := get(t, c, gvk.g, gvk.ns, "research-vision")
			stop, _, _ := unstructured.NestedString(q.Object, "spec", "stopPolicy")
			assert.Equal(t, "Hold", stop, gvk.g.Kind)
		}
		for _, gone := range []struct {
			g  schema.GroupVersionKind
			ns string
		}{{schedsync.VolcanoQueueKind.GVK, ""}, {schedsync.KAIQueueKind.GVK, ""}, {schedsync.ClusterQueueKind.GVK, ""},
			{schedsync.LocalQueueKind.GVK, "platform"}} {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gone.g)
			err := c.Get(ctx, types.NamespacedName{Namespace: gone.ns, Name: "platform"}, u)
			assert.True(t, apierrors.IsNotFound(err), "%s platform still exists: %v", gone.g.Kind, err)
		}
		code, out, _ = sync("--policies", removed, "--check")
		assert.Equal(t, 0, code, "closed queues are what the model wants while they hold work: %s", out)

		// Back to the example model: the tenants return, their queues reopen.
		code, _, errText = sync()
		require.Equal(t, 0, code, errText)
		vq = get(t, c, schedsync.VolcanoQueueKind.GVK, "", "research-vision")
		state, _, _ = unstructured.NestedString(vq.Object, "status", "state")
		assert.Equal(t, "Open", state)
		assert.NotContains(t, vq.GetLabels(), schedsync.LabelClosed)
	})

	t.Run("a hand edit is reported by --check and repaired by sync", func(t *testing.T) {
		q := get(t, c, schedsync.VolcanoQueueKind.GVK, "", "research-llm")
		patch := []byte(`{"spec":{"capability":{"nvidia.com/gpu":"999"}}}`)
		require.NoError(t, c.Patch(ctx, q, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("kubectl-edit")))
		stray := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
			"metadata": map[string]any{"name": "stray", "labels": map[string]any{config.LabelManagedBy: config.ManagedBy,
				config.LabelComponent: schedsync.Component}},
			"spec": map[string]any{"resources": map[string]any{"gpu": map[string]any{"quota": int64(1), "limit": int64(1)}}}}}
		require.NoError(t, c.Create(ctx, stray))
		foreign := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
			"metadata": map[string]any{"name": "someone-elses"}, "spec": map[string]any{}}}
		require.NoError(t, c.Create(ctx, foreign))
		// The model's PriorityClass "build", replaced by one that is not
		// Mandate's (as KAI ships its own): reported where it differs, and
		// never written.
		pc := get(t, c, schedsync.PriorityClassKind.GVK, "", "build")
		require.NoError(t, c.Delete(ctx, pc))
		theirs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
			"metadata": map[string]any{"name": "build"}, "value": int64(100), "description": "theirs"}}
		require.NoError(t, c.Create(ctx, theirs))

		code, out, _ := sync("--check")
		require.Equal(t, 1, code, out)
		assert.Regexp(t, `update +Queue.scheduling.volcano.sh +- +research-llm +spec.capability.nvidia.com/gpu: "999" -> "256"`, out)
		assert.Regexp(t, `delete +Queue.scheduling.run.ai +- +stray `, out)
		assert.Regexp(t, `foreign +PriorityClass.scheduling.k8s.io +- +build +description: "theirs" -> "Interactive builds.*not labelled as Mandate's`, out)
		assert.NotContains(t, out, "someone-elses")
		lines := strings.Count(strings.TrimSpace(out), "\n")
		assert.Equal(t, 3, lines, "exactly the three differences: %s", out)
		code, out, _ = sync("--check", "-o", "json")
		require.Equal(t, 1, code)
		var report struct{ Changes []schedsync.Change }
		require.NoError(t, json.Unmarshal([]byte(out), &report))
		assert.Len(t, report.Changes, 3)

		code, _, errText := sync()
		require.Equal(t, 0, code, errText)
		pc = get(t, c, schedsync.PriorityClassKind.GVK, "", "build")
		assert.Equal(t, "theirs", pc.Object["description"], "a PriorityClass that is not Mandate's is left alone")
		assert.NotContains(t, pc.GetLabels(), config.LabelManagedBy)
		require.NoError(t, c.Delete(ctx, pc))
		code, out, _ = sync("--check")
		assert.Equal(t, 1, code, "the missing class is drift: %s", out)
		code, _, errText = sync()
		require.Equal(t, 0, code, errText)
		code, out, _ = sync("--check")
		assert.Equal(t, 0, code, out)
		q = get(t, c, schedsync.VolcanoQueueKind.GVK, "", "research-llm")
		capGPU, _, _ := unstructured.NestedString(q.Object, "spec", "capability", "nvidia.com/gpu")
		assert.Equal(t, "256", capGPU)
		get(t, c, schedsync.KAIQueueKind.GVK, "", "someone-elses") // left alone
	})
}

// readModel reads the example model (the embedded default policies' data).
func readModel(t *testing.T) map[string]any {
	t.Helper()
	b, err := fs.ReadFile(policies.FS, "mandate/model/data.json")
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// editModel writes a copy of the default policies whose model is edited by
// edit, and returns its directory.
func editModel(t *testing.T, model map[string]any, edit func(map[string]any)) string {
	t.Helper()
	var m map[string]any
	b, err := json.Marshal(model)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &m))
	edit(m)
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, policies.FS))
	b, err = json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	data := filepath.Join(dir, "mandate", "model", "data.json")
	require.NoError(t, os.Chmod(data, 0o600))
	require.NoError(t, os.WriteFile(data, b, 0o600))
	return dir
}

func quota(m map[string]any, tenant string) map[string]any {
	return m["tenants"].(map[string]any)[tenant].(map[string]any)["quota"].(map[string]any)["nvidia.com/gpu"].(map[string]any)
}

// renderModel is what sync should create from the model on the test's cluster.
func renderModel(t *testing.T, c client.Client, m map[string]any) []schedsync.Object {
	t.Helper()
	spec, err := model.FromData(map[string]any{"mandate": map[string]any{"model": m}})
	require.NoError(t, err)
	cluster, err := schedsync.Syncer{Client: c}.ReadCluster(context.Background())
	require.NoError(t, err)
	objs, err := schedsync.Render(spec, cluster, schedsync.Options{Schedulers: schedsync.AllSchedulers()})
	require.NoError(t, err)
	return objs
}

func live(o schedsync.Object) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(o.GroupVersionKind())
	return u
}

func get(t *testing.T, c client.Client, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, u), "%s %s", gvk.Kind, name)
	return u
}

// versions maps "Kind.group/namespace/name" of each object to its
// resourceVersion in the cluster.
func versions(t *testing.T, c client.Client, objs []schedsync.Object) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range objs {
		u := live(o)
		require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(o.Unstructured), u))
		out[o.GroupVersionKind().GroupKind().String()+"/"+o.GetNamespace()+"/"+o.GetName()] = u.GetResourceVersion()
	}
	return out
}

func managers(u *unstructured.Unstructured) []string {
	var out []string
	for _, f := range u.GetManagedFields() {
		out = append(out, f.Manager)
	}
	return out
}

// missingFields lists the leaves of want that got lacks or holds another
// value in: what the API server pruned or changed.
func missingFields(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		var out []string
		for k, v := range w {
			out = append(out, missingFields(path+"."+k, v, g[k])...)
		}
		return out
	case []any:
		g, _ := got.([]any)
		if len(g) != len(w) {
			return []string{path + ": length"}
		}
		var out []string
		for i := range w {
			out = append(out, missingFields(path, w[i], g[i])...)
		}
		return out
	}
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(got)
	if string(wb) != string(gb) {
		return []string{path + ": want " + string(wb) + ", got " + string(gb)}
	}
	return nil
}
