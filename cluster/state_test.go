package cluster

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/topology"
)

func defaultModel(t *testing.T) model.Model {
	t.Helper()
	p, err := evaluator.LoadFS(policies.FS, "embedded")
	require.NoError(t, err)
	ev, err := evaluator.New(context.Background(), p, evaluator.Options{})
	require.NoError(t, err)
	return ev.Model()
}

func levelNames(s *topology.Snapshot) []string {
	var names []string
	for _, l := range s.Levels() {
		names = append(names, l.Name)
	}
	return names
}

// TestSetModelReshapes: a new revision with other topology levels and
// another tenant tree reshapes the state from the objects it holds, and
// later events land in the new shape.
func TestSetModelReshapes(t *testing.T) {
	m := defaultModel(t)
	s, err := New(m)
	require.NoError(t, err)
	require.NoError(t, s.LoadFile("../examples/cluster.yaml"))
	gang := topology.Request{Pods: 2, GPUsPerPod: 8, Resource: "nvidia.com/gpu", RequiredLevel: "block"}
	before, err := s.Snapshot().Place(gang)
	require.NoError(t, err)
	require.True(t, before.FitsNow, "%+v", before)
	vision := s.Usage("research-vision")["research-vision"]["nvidia.com/gpu"]
	product := s.Usage("product")["product"]["nvidia.com/gpu"]
	require.Contains(t, s.Usage("research-vision"), "research")

	next := m
	next.Topology.Levels = []topology.Level{
		{Name: "zone", NodeLabel: "topology.kubernetes.io/zone"},
		{Name: "rack", NodeLabel: "mandate.dev/leaf-block"},
		{Name: "node", NodeLabel: "kubernetes.io/hostname"},
	}
	next.Tenants = map[string]model.Tenant{}
	for name, tenant := range m.Tenants {
		next.Tenants[name] = tenant
	}
	next.Tenants["research-vision"] = model.Tenant{Parent: "product"}
	require.NoError(t, s.SetModel(next))

	snap := s.Snapshot()
	assert.Equal(t, []string{"zone", "rack", "node"}, levelNames(snap))
	assert.Equal(t, 50, snap.NodeCount())
	_, err = snap.Place(gang)
	assert.Error(t, err, "the old level is gone")
	gang.RequiredLevel = "rack"
	after, err := snap.Place(gang)
	require.NoError(t, err)
	t.Logf("before %s %s free after %d, after %s %s free after %d", before.Level, before.Domain, before.FreeAfter, after.Level, after.Domain, after.FreeAfter)
	assert.Equal(t, before.FitsNow, after.FitsNow)
	assert.Equal(t, "rack", after.Level)
	assert.Equal(t, before.FreeAfter, after.FreeAfter, "the same pods take the same GPUs")
	assert.Equal(t, before.Score, after.Score)

	usage := s.Usage("research-vision")
	assert.NotContains(t, usage, "research")
	assert.Equal(t, vision, usage["research-vision"]["nvidia.com/gpu"])
	assert.Equal(t, product.Total+vision.Total, usage["product"]["nvidia.com/gpu"].Total, "research-vision now rolls up into product")

	// Events after the reshape land in the new model.
	s.UpsertPod(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "vision"},
		Spec: corev1.PodSpec{NodeName: "h100-b1-0", Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	})
	assert.Equal(t, vision.Total+8, s.Usage("research-vision")["research-vision"]["nvidia.com/gpu"].Total)

	// Levels the topology model refuses leave the state as it was.
	bad := next
	bad.Topology.Levels = []topology.Level{{Name: "zone", NodeLabel: "a"}, {Name: "zone", NodeLabel: "b"}}
	require.Error(t, s.SetModel(bad))
	assert.Equal(t, []string{"zone", "rack", "node"}, levelNames(s.Snapshot()))
}
