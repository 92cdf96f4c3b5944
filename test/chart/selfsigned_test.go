package chart

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/certs"
	"github.com/mandate-dev/mandate/test/envtest"
)

const caSecretName = "mandate-webhook-ca"

// Without cert-manager the API server's client CA is a ConfigMap of the
// operator's (webhook.clientAuth.caConfigMap).
var selfSignedValues = []string{"--set", "certs.mode=selfSigned", "--set", "webhook.clientAuth.caConfigMap=apiserver-client-ca"}

// TestTemplateSelfSigned: certs.mode selfSigned renders nothing of
// cert-manager, no caBundle (mandate serve sets it), an emptyDir for the
// serving certificate, the rotator's flags and lifetimes, and RBAC limited
// by resourceNames to the two webhook configurations and the CA Secret.
func TestTemplateSelfSigned(t *testing.T) {
	objs := render(t, release, namespace, selfSignedValues...)
	for _, o := range objs {
		assert.NotEqual(t, "cert-manager.io/v1", o.GetAPIVersion(), "no cert-manager object: %s", key(o))
	}
	m, v := webhookConfigurations(t, objs)
	assert.NotContains(t, m.Annotations, "cert-manager.io/inject-ca-from")
	assert.NotContains(t, v.Annotations, "cert-manager.io/inject-ca-from")
	for _, w := range m.Webhooks {
		assert.Empty(t, w.ClientConfig.CABundle, w.Name)
	}
	for _, w := range v.Webhooks {
		assert.Empty(t, w.ClientConfig.CABundle, w.Name)
	}

	d := typed[appsv1.Deployment](t, find(t, objs, "Deployment", fullname))
	c := d.Spec.Template.Spec.Containers[0]
	for _, arg := range []string{"--cert-dir=/tls", "--certs-mode=selfSigned", "--certs-secret-name=" + caSecretName,
		"--certs-service-name=" + fullname, "--certs-webhook-configuration=" + fullname} {
		assert.Contains(t, c.Args, arg)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, "8760h", env["MANDATE_CERTS_CA_DURATION"])
	assert.Equal(t, "2920h", env["MANDATE_CERTS_CA_RENEW_BEFORE"])
	assert.Equal(t, "720h", env["MANDATE_CERTS_SERVING_DURATION"])
	assert.Equal(t, "240h", env["MANDATE_CERTS_SERVING_RENEW_BEFORE"])
	assert.Equal(t, "1m", env["MANDATE_CERTS_PROPAGATION_DELAY"])
	assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "tls", MountPath: "/tls"}, "writable")
	i := slices.IndexFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "tls" })
	require.GreaterOrEqual(t, i, 0)
	tlsVolume := d.Spec.Template.Spec.Volumes[i]
	require.NotNil(t, tlsVolume.EmptyDir, "the serving certificate lives in an emptyDir")
	assert.Nil(t, tlsVolume.Secret)
	assert.Equal(t, corev1.StorageMediumMemory, tlsVolume.EmptyDir.Medium)

	checkRBAC(t, objs) // the main ClusterRole is unchanged
	role := typed[rbacv1.ClusterRole](t, find(t, objs, "ClusterRole", fullname+"-certs"))
	assert.Equal(t, []rbacv1.PolicyRule{{
		APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"},
		ResourceNames: []string{fullname}, Verbs: []string{"get", "update", "patch"},
	}}, role.Rules)
	secrets := typed[rbacv1.Role](t, find(t, objs, "Role", fullname+"-certs"))
	assert.Equal(t, namespace, secrets.Namespace)
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{caSecretName}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
	}, secrets.Rules)
	for kind, name := range map[string]string{"ClusterRoleBinding": fullname + "-certs", "RoleBinding": fullname + "-certs"} {
		b := find(t, objs, kind, name)
		subjects, _, err := unstructured.NestedSlice(b.Object, "subjects")
		require.NoError(t, err)
		require.Len(t, subjects, 1)
		assert.Equal(t, map[string]any{"kind": "ServiceAccount", "name": fullname, "namespace": namespace}, subjects[0])
	}

	// The default (files) rendering has none of it.
	for _, o := range render(t, release, namespace) {
		assert.NotEqual(t, fullname+"-certs", o.GetName(), "files mode renders no %s", key(o))
	}
}

// TestApplySelfSigned applies the selfSigned release to a real API server
// and runs the certificate rotator as the chart's ServiceAccount: its RBAC
// is enough to create the CA Secret and set both caBundles, and no more
// (another webhook configuration and another Secret are forbidden).
func TestApplySelfSigned(t *testing.T) {
	objs := render(t, release, namespace, selfSignedValues...)
	env := envtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(time.Minute))
	defer cancel()
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))
	var last []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			last = append(last, o)
			continue
		}
		require.NoError(t, env.Client.Create(ctx, o.DeepCopy()), "create %s", key(o))
	}
	for _, o := range last {
		require.NoError(t, env.Client.Create(ctx, o.DeepCopy()), "create %s", key(o))
	}

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + fullname}
	sa, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	rot, err := certs.New(certs.Options{Client: sa, Namespace: namespace, SecretName: caSecretName,
		WebhookConfigurationName: fullname, Hosts: []string{fullname + "." + namespace + ".svc"}, CertDir: t.TempDir()})
	require.NoError(t, err)
	_, err = rot.Sync(ctx)
	require.NoError(t, err, "the chart's RBAC lets mandate serve keep its certificates")

	var secret corev1.Secret
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: caSecretName}, &secret))
	var m admissionregistrationv1.MutatingWebhookConfiguration
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: fullname}, &m))
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: fullname}, &v))
	for _, b := range [][]byte{m.Webhooks[0].ClientConfig.CABundle, v.Webhooks[0].ClientConfig.CABundle, v.Webhooks[1].ClientConfig.CABundle} {
		assert.Equal(t, string(secret.Data[certs.SecretCACert]), string(b), "caBundle is the CA of the Secret")
	}

	// Nothing beyond its own objects.
	other := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "someone-else"}}
	require.NoError(t, env.Client.Create(ctx, other))
	other.Labels = map[string]string{"x": "y"}
	assert.True(t, apierrors.IsForbidden(sa.Update(ctx, other)), "another webhook configuration is forbidden")
	assert.True(t, apierrors.IsForbidden(sa.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "someone-elses-secret"}, &corev1.Secret{})),
		"another Secret is forbidden")
	assert.True(t, apierrors.IsForbidden(sa.Get(ctx, client.ObjectKey{Namespace: "default", Name: caSecretName}, &corev1.Secret{})),
		"a Secret of another namespace is forbidden")
}
