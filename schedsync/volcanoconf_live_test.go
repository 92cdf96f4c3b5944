package schedsync

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mandate-dev/mandate/test/envtest"
)

// TestVolcanoConfigForbidden: where sync is granted Volcano's queues but
// not its namespace's ConfigMaps (the chart grants them only where that
// namespace exists at install), the scheduler's configuration is reported
// and left alone, and the rest is still planned and applied.
func TestVolcanoConfigForbidden(t *testing.T) {
	env := envtest.Start(t)
	ctx := context.Background()
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes", "namespaces"}, Verbs: []string{"list"}},
		{APIGroups: []string{"scheduling.k8s.io"}, Resources: []string{"priorityclasses"}, Verbs: []string{"get", "list", "create", "patch", "delete"}},
		{APIGroups: []string{"scheduling.volcano.sh"}, Resources: []string{"queues", "podgroups"}, Verbs: []string{"get", "list", "create", "patch", "delete"}},
		{APIGroups: []string{"scheduling.volcano.sh"}, Resources: []string{"queues/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{"topology.volcano.sh"}, Resources: []string{"hypernodes"}, Verbs: []string{"get", "list", "create", "patch", "delete"}},
	}
	require.NoError(t, env.Client.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "sync-without-configmaps"}, Rules: rules}))
	require.NoError(t, env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sync-without-configmaps"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "sync-without-configmaps"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "sync"}}}))
	u, err := env.Environment.AddUser(crenvtest.User{Name: "sync"}, nil)
	require.NoError(t, err)
	c, err := client.New(u.Config(), client.Options{Scheme: env.Scheme})
	require.NoError(t, err)

	m := exampleSpec(t)
	s := Syncer{Client: c}
	o := Options{Schedulers: []string{Volcano}}
	var plan Plan
	// RBAC takes a moment to reach the authorizer: the first plans may be
	// refused for the queues too.
	envtest.WaitFor(t, 30*time.Second, "the sync user's RBAC to apply", func() bool {
		plan, err = s.PlanModel(ctx, m, o)
		return err == nil
	})
	var cm *Change
	for i, ch := range plan.Changes {
		if ch.Kind == "ConfigMap" {
			cm = &plan.Changes[i]
		}
	}
	require.NotNil(t, cm, "the ConfigMap is in the plan")
	assert.Equal(t, Foreign, cm.Action)
	assert.Contains(t, cm.Detail, "unable to read it, so it is left alone")
	require.NoError(t, s.Apply(ctx, plan, false), "the rest is applied")
	after, err := s.PlanModel(ctx, m, o)
	require.NoError(t, err)
	for _, ch := range after.Drift() {
		assert.Equal(t, "ConfigMap", ch.Kind, "only the ConfigMap still differs: %s %s", ch.Kind, ch.Name)
	}
}
