package chart

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/mandate-dev/mandate/schedsync"
)

// TestTemplateSync: sync.* values become serve's --sync flags, and the
// sync's RBAC covers every kind it manages (server-side apply is patch,
// pruning is delete) and nothing when it is off.
func TestTemplateSync(t *testing.T) {
	assert.Nil(t, findOptional(render(t, release, namespace), "ClusterRole", fullname+"-sync"), "no sync RBAC by default")

	objs := render(t, release, namespace, nonDefault...)
	d := typed[appsv1.Deployment](t, find(t, objs, "Deployment", fullname))
	args := d.Spec.Template.Spec.Containers[0].Args
	for _, a := range []string{"--sync=true", "--sync-interval=2m", "--sync-mode=report", "--sync-schedulers=volcano,kueue"} {
		assert.Contains(t, args, a)
	}
	role := typed[rbacv1.ClusterRole](t, find(t, objs, "ClusterRole", fullname+"-sync"))
	allows := func(group, resource, verb string) bool {
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
		return false
	}
	for _, k := range schedsync.Kinds(schedsync.AllSchedulers()) {
		resource := plural(strings.ToLower(k.GVK.Kind))
		for _, verb := range []string{"get", "list", "create", "patch", "delete"} {
			assert.True(t, allows(k.GVK.Group, resource, verb), "%s %s.%s", verb, resource, k.GVK.Group)
		}
		if k.StatusFields {
			assert.True(t, allows(k.GVK.Group, resource+"/status", "patch"), "patch %s/status", resource)
		}
	}
	for _, r := range role.Rules {
		assert.NotContains(t, r.Verbs, "*")
		assert.NotContains(t, r.Resources, "*")
	}
	lease := typed[rbacv1.Role](t, find(t, objs, "Role", fullname+"-sync"))
	assert.Equal(t, namespace, lease.Namespace)
	assert.Equal(t, []string{"leases"}, lease.Rules[0].Resources)
	find(t, objs, "ClusterRoleBinding", fullname+"-sync")
	find(t, objs, "RoleBinding", fullname+"-sync")

	// Volcano's scheduler ConfigMap: the flags, and ConfigMaps in Volcano's
	// namespace only, never listed, never deleted.
	for _, a := range []string{"--sync-volcano-config-namespace=" + schedsync.DefaultVolcanoConfigNamespace,
		"--sync-volcano-config-name=" + schedsync.DefaultVolcanoConfigName} {
		assert.Contains(t, args, a)
	}
	cm := typed[rbacv1.Role](t, find(t, objs, "Role", fullname+"-sync-volcano-config"))
	assert.Equal(t, schedsync.DefaultVolcanoConfigNamespace, cm.Namespace)
	assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "patch"}}}, cm.Rules)
	binding := typed[rbacv1.RoleBinding](t, find(t, objs, "RoleBinding", fullname+"-sync-volcano-config"))
	assert.Equal(t, schedsync.DefaultVolcanoConfigNamespace, binding.Namespace)
	assert.False(t, allows("", "configmaps", "list"), "no ConfigMap anywhere else")
	assert.Nil(t, findOptional(render(t, release, namespace, "--set", "sync.enabled=true", "--set", "sync.schedulers={kai}"),
		"Role", fullname+"-sync-volcano-config"), "no Volcano, no ConfigMap RBAC")
}

func plural(kind string) string {
	switch {
	case strings.HasSuffix(kind, "y"):
		return strings.TrimSuffix(kind, "y") + "ies"
	case strings.HasSuffix(kind, "s"):
		return kind + "es"
	}
	return kind + "s"
}
