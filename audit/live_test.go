package audit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/audit"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// createCluster creates the objects of a snapshot in a real API server:
// the priority classes the default model names, namespaces, nodes with
// their GPU capacity, the owners and then their pods (bound to their
// nodes, with controller references to the owners' real UIDs, and their
// status phase). The finished Job is left out: the API server only takes
// a Complete condition from the Job controller's bookkeeping.
func createCluster(t *testing.T, c client.Client, inv *inventory.Inventory) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, fixtures.CreatePriorityClasses(ctx, c))
	fresh := func(obj *unstructured.Unstructured) *unstructured.Unstructured {
		out := obj.DeepCopy()
		out.SetUID("")
		out.SetResourceVersion("")
		out.SetCreationTimestamp(metav1.Time{})
		return out
	}
	for _, ns := range inv.Namespaces {
		err := c.Create(ctx, fresh(ns))
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, ns.GetName())
		}
	}
	for _, n := range inv.Nodes {
		node := &corev1.Node{}
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(fresh(n).Object, node), n.GetName())
		require.NoError(t, fixtures.CreateNode(ctx, c, node))
	}
	uids := map[string]types.UID{}
	for _, o := range inv.Owners {
		if o.GetName() == "eval-nightly" {
			continue
		}
		obj := fresh(o)
		delete(obj.Object, "status")
		require.NoError(t, c.Create(ctx, obj), o.GetName())
		uids[o.GetName()] = obj.GetUID()
	}
	for _, p := range inv.Pods {
		obj := fresh(p)
		refs := obj.GetOwnerReferences()
		if len(refs) > 0 {
			uid, ok := uids[refs[0].Name]
			if !ok {
				continue // the finished Job's pod
			}
			refs[0].UID = uid
			obj.SetOwnerReferences(refs)
		}
		phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
		delete(obj.Object, "status")
		require.NoError(t, c.Create(ctx, obj), p.GetName())
		require.NoError(t, unstructured.SetNestedField(obj.Object, phase, "status", "phase"))
		require.NoError(t, c.Status().Update(ctx, obj), p.GetName())
	}
}

func TestAuditLiveCluster(t *testing.T) {
	env := envtest.Start(t, envtest.WithPyTorchJobCRD(), envtest.WithWorkloadCRDs())
	ctx := context.Background()
	createCluster(t, env.Client, readSnapshot(t, admittedSnapshot))
	kubeconfig := env.WriteKubeconfig(t, "auditor")

	inv, err := inventory.ListKubeconfig(ctx, kubeconfig, "")
	require.NoError(t, err)
	assert.Empty(t, inv.Notes, "every kind is served")
	assert.Len(t, inv.Nodes, 8)
	assert.Len(t, inv.Owners, 3)

	t.Run("default policy", func(t *testing.T) {
		rep := run(t, inv, defaultPolicy(t))
		want := map[string]string{}
		for _, w := range allWorkloads {
			want[w] = string(audit.VerdictUnchanged)
		}
		assert.Equal(t, want, verdicts(rep))
		for _, r := range rep.Workloads {
			assert.Empty(t, r.Warnings, r.Workload.String())
		}
		assert.True(t, strings.HasPrefix(rep.Source, "cluster https://127.0.0.1:"), rep.Source)
	})

	t.Run("candidate", func(t *testing.T) {
		rep := run(t, inv, candidatePolicy(t))
		assert.Equal(t, candidateVerdicts, verdicts(rep))
		for _, r := range rep.Workloads {
			if r.Workload.Name == "pretrain" {
				assert.Equal(t, []string{"queue: research-llm -> llm-v2"}, r.Differences)
				assert.Equal(t, audit.Subtracted{Pods: 4, GPUs: map[string]int{"nvidia.com/gpu": 32}}, r.Subtracted)
			}
		}
	})

	t.Run("namespace", func(t *testing.T) {
		rep, err := audit.Audit(ctx, inv, audit.Options{Decider: candidatePolicy(t), Model: candidatePolicy(t).Model(), Namespace: "product"})
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"Job product/finetune": "would-deny PRIORITY_NOT_ALLOWED", "Pod product/serve-0": "unchanged"}, verdicts(rep))
	})

	t.Run("missing CRD is a note", func(t *testing.T) {
		crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "pytorchjobs.kubeflow.org"}}
		require.NoError(t, env.Client.Delete(ctx, crd))
		var inv *inventory.Inventory
		require.Eventually(t, func() bool {
			var err error
			inv, err = inventory.ListKubeconfig(ctx, kubeconfig, "")
			require.NoError(t, err)
			return len(inv.Notes) > 0
		}, time.Minute, 200*time.Millisecond)
		assert.Equal(t, []string{"PyTorchJob (kubeflow.org/v1) skipped: the API server does not serve it (CRD not installed)"}, inv.Notes)

		rep := run(t, inv, defaultPolicy(t))
		assert.Contains(t, rep.Notes, inv.Notes[0])
		// Its pods are decided on their own, as the webhook decides a pod
		// whose owner is gone.
		var alone int
		for _, r := range rep.Workloads {
			if strings.HasPrefix(r.Workload.Name, "pretrain-") {
				alone++
				assert.Equal(t, []string{"controlled by PyTorchJob pretrain, which is not in the inventory: audited on its own"}, r.Notes)
			}
		}
		assert.Equal(t, 4, alone)
	})
}
