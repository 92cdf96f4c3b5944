package chart

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/test/envtest"
)

const (
	bundleURL = "https://bundles.example/mandate.tar.gz"
	shadowURL = "https://bundles.example/candidate.tar.gz"
)

// bundleValues take the policy from a bundle with every option set.
var bundleValues = []string{
	"--set", "policies.source=bundle",
	"--set", "policies.bundle.url=" + bundleURL,
	"--set", "policies.bundle.interval=1m",
	"--set", "policies.bundle.verificationKey.secretName=mandate-bundle-key",
	"--set", "policies.bundle.verificationKey.key=signing.pub",
	"--set", "policies.bundle.verificationKey.keyId=prod",
	"--set", "policies.bundle.verificationKey.scope=mandate",
	"--set", "policies.bundle.serviceConfig.secretName=mandate-bundle-service",
	"--set", "policies.bundle.requireSignature=true",
	"--set", "policies.bundle.bearerToken.secretName=mandate-bundle-token",
	"--set", "policies.bundle.caBundle.configMapName=mandate-bundle-ca",
	"--set", "policies.shadow.url=" + shadowURL,
	"--set", "evaluation.timeout=250ms",
}

// bundleArgs are the arguments of mandate serve that start with --bundle
// or --shadow-bundle, in order.
func bundleArgs(c corev1.Container) []string {
	var out []string
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--bundle") || strings.HasPrefix(a, "--shadow-bundle") {
			out = append(out, a)
		}
	}
	return out
}

func bundleVolume(t *testing.T, spec corev1.PodSpec, name string) corev1.Volume {
	t.Helper()
	i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == name })
	require.GreaterOrEqual(t, i, 0, "volume %s", name)
	return spec.Volumes[i]
}

// TestTemplateBundle: policies.source bundle with every option renders the
// bundle flags, mounts the key, token and CA read-only from the named
// Secrets and ConfigMap, and gives every path serve writes (the download
// directory and the persist directory) a writable emptyDir, since the root
// filesystem stays read-only.
func TestTemplateBundle(t *testing.T) {
	objs := render(t, release, namespace, bundleValues...)
	d := typed[appsv1.Deployment](t, find(t, objs, "Deployment", fullname))
	checkDeployment(t, d, 2, tlsSecretName)
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]

	assert.Equal(t, []string{
		"--bundle=" + bundleURL,
		"--bundle-persist-dir=/var/lib/mandate/bundle",
		"--bundle-interval=1m",
		"--bundle-verification-key=/etc/mandate/bundle-verification-key/signing.pub",
		"--bundle-verification-key-id=prod",
		"--bundle-scope=mandate",
		"--bundle-require-signature=true",
		"--bundle-bearer-token-file=/etc/mandate/bundle-bearer-token/token",
		"--bundle-ca-file=/etc/mandate/bundle-ca/ca.crt",
		"--bundle-service-config=/etc/mandate/bundle-service/service.yaml",
	}, slices.DeleteFunc(bundleArgs(c), func(a string) bool { return strings.HasPrefix(a, "--shadow-bundle") }))
	assert.Contains(t, c.Args, "--shadow-bundle="+shadowURL)
	assert.Contains(t, c.Args, "--evaluation-timeout=250ms")
	for _, a := range c.Args {
		assert.NotContains(t, a, "--policies", "a bundle replaces --policies")
	}

	for _, m := range []corev1.VolumeMount{
		{Name: "tmp", MountPath: "/tmp"},
		{Name: "bundle-persist", MountPath: "/var/lib/mandate/bundle"},
		{Name: "bundle-verification-key", MountPath: "/etc/mandate/bundle-verification-key", ReadOnly: true},
		{Name: "bundle-bearer-token", MountPath: "/etc/mandate/bundle-bearer-token", ReadOnly: true},
		{Name: "bundle-ca", MountPath: "/etc/mandate/bundle-ca", ReadOnly: true},
		{Name: "bundle-service", MountPath: "/etc/mandate/bundle-service", ReadOnly: true},
	} {
		assert.Contains(t, c.VolumeMounts, m)
	}
	for _, name := range []string{"tmp", "bundle-persist"} {
		v := bundleVolume(t, spec, name)
		require.NotNil(t, v.EmptyDir, "%s is an emptyDir", name)
		require.NotNil(t, v.EmptyDir.SizeLimit, "%s has a size limit", name)
		assert.GreaterOrEqual(t, v.EmptyDir.SizeLimit.Value(), int64(128<<20), "%s holds two bundles of at most 64 MiB", name)
	}
	key := bundleVolume(t, spec, "bundle-verification-key")
	require.NotNil(t, key.Secret)
	assert.Equal(t, "mandate-bundle-key", key.Secret.SecretName)
	assert.Equal(t, []corev1.KeyToPath{{Key: "signing.pub", Path: "signing.pub"}}, key.Secret.Items)
	token := bundleVolume(t, spec, "bundle-bearer-token")
	require.NotNil(t, token.Secret)
	assert.Equal(t, "mandate-bundle-token", token.Secret.SecretName)
	assert.Equal(t, []corev1.KeyToPath{{Key: "token", Path: "token"}}, token.Secret.Items)
	ca := bundleVolume(t, spec, "bundle-ca")
	require.NotNil(t, ca.ConfigMap)
	assert.Equal(t, "mandate-bundle-ca", ca.ConfigMap.Name)
	assert.Equal(t, []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}, ca.ConfigMap.Items)
	service := bundleVolume(t, spec, "bundle-service")
	require.NotNil(t, service.Secret)
	assert.Equal(t, "mandate-bundle-service", service.Secret.SecretName)
	assert.Equal(t, []corev1.KeyToPath{{Key: "service.yaml", Path: "service.yaml"}}, service.Secret.Items)

	// Every file an argument names is under a mount; every directory serve
	// writes is under a writable one (the root filesystem is read-only).
	mountOf := func(path string) *corev1.VolumeMount {
		for i, m := range c.VolumeMounts {
			if path == m.MountPath || strings.HasPrefix(path, m.MountPath+"/") {
				return &c.VolumeMounts[i]
			}
		}
		return nil
	}
	for _, a := range c.Args {
		if _, val, ok := strings.Cut(a, "="); ok && strings.HasPrefix(val, "/") {
			assert.NotNil(t, mountOf(val), "%s names a path under no volume mount", a)
		}
	}
	for _, dir := range []string{"/tmp", "/var/lib/mandate/bundle"} {
		m := mountOf(dir)
		if assert.NotNil(t, m, "serve writes %s", dir) {
			assert.False(t, m.ReadOnly, "serve writes %s", dir)
		}
	}

	t.Run("persist off", func(t *testing.T) {
		d := typed[appsv1.Deployment](t, find(t, render(t, release, namespace,
			"--set", "policies.source=bundle", "--set", "policies.bundle.url="+bundleURL, "--set", "policies.bundle.persist=false"), "Deployment", fullname))
		c := d.Spec.Template.Spec.Containers[0]
		assert.Equal(t, []string{"--bundle=" + bundleURL, "--bundle-interval=30s"}, bundleArgs(c))
		assert.NotContains(t, c.VolumeMounts, corev1.VolumeMount{Name: "bundle-persist", MountPath: "/var/lib/mandate/bundle"})
		assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"}, "downloads still need /tmp")
	})

	t.Run("shadow beside the embedded policy", func(t *testing.T) {
		d := typed[appsv1.Deployment](t, find(t, render(t, release, namespace,
			"--set", "policies.shadow.url="+shadowURL, "--set", "policies.bundle.verificationKey.secretName=k"), "Deployment", fullname))
		c := d.Spec.Template.Spec.Containers[0]
		assert.Equal(t, []string{"--shadow-bundle=" + shadowURL, "--bundle-interval=30s",
			"--bundle-verification-key=/etc/mandate/bundle-verification-key/key.pub"}, bundleArgs(c),
			"no --bundle and no persist dir: the shadow is never persisted")
		assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"})
	})

	t.Run("default has no bundle", func(t *testing.T) {
		d := typed[appsv1.Deployment](t, find(t, render(t, release, namespace), "Deployment", fullname))
		c := d.Spec.Template.Spec.Containers[0]
		assert.Empty(t, bundleArgs(c))
		assert.Contains(t, c.Args, "--evaluation-timeout=1s")
		assert.Equal(t, []corev1.VolumeMount{{Name: "tls", MountPath: "/tls", ReadOnly: true}}, c.VolumeMounts)
		assert.Len(t, d.Spec.Template.Spec.Volumes, 1)
	})
}

// TestApplyBundle creates every object of the bundle release, and the
// Secrets and ConfigMap it names, on a real API server.
func TestApplyBundle(t *testing.T) {
	objs := render(t, release, namespace, bundleValues...)
	env := envtest.Start(t, envtest.WithCertManagerCRDs())
	ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(time.Minute))
	defer cancel()
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: namespace, Name: name} }
	require.NoError(t, env.Client.Create(ctx, &corev1.Secret{ObjectMeta: meta("mandate-bundle-key"), StringData: map[string]string{"signing.pub": "-----BEGIN PUBLIC KEY-----\n"}}))
	require.NoError(t, env.Client.Create(ctx, &corev1.Secret{ObjectMeta: meta("mandate-bundle-token"), StringData: map[string]string{"token": "t"}}))
	require.NoError(t, env.Client.Create(ctx, &corev1.Secret{ObjectMeta: meta("mandate-bundle-service"), StringData: map[string]string{"service.yaml": "credentials: {}\n"}}))
	require.NoError(t, env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta("mandate-bundle-ca"), Data: map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\n"}}))

	var first, last []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			last = append(last, o)
		default:
			first = append(first, o)
		}
	}
	for _, o := range append(first, last...) {
		require.NoError(t, env.Client.Create(ctx, o.DeepCopy()), "create %s", key(o))
	}
	t.Logf("the API server accepted all %d objects", len(objs))

	var stored appsv1.Deployment
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: fullname}, &stored))
	assert.Contains(t, stored.Spec.Template.Spec.Containers[0].Args, "--bundle="+bundleURL, "stored as rendered")
}

// TestChartFlagsExist builds mandate and checks that every --flag the chart
// renders, in every configuration the tests use, is a flag of `mandate
// serve --help`: a renamed flag would otherwise only fail in a cluster.
func TestChartFlagsExist(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mandate")
	ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(5*time.Minute))
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/mandate")
	build.Dir = envtest.RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/mandate: %v\n%s", err, out)
	}
	help, err := exec.CommandContext(ctx, bin, "serve", "--help").CombinedOutput()
	require.NoError(t, err, "mandate serve --help\n%s", help)
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9-]+)`).FindAllStringSubmatch(string(help), -1) {
		flags[m[1]] = true
	}
	require.True(t, flags["bundle"] && flags["cert-dir"], "parsed no flags from serve --help:\n%s", help)

	checked := 0
	for name, values := range map[string][]string{
		"default": nil, "non-default": nonDefault, "selfSigned": selfSignedValues, "bundle": bundleValues,
		"configMap": {"--set", "policies.source=configMap", "--set-string", `policies.configMap.files.a\.rego=package a`},
	} {
		d := typed[appsv1.Deployment](t, find(t, render(t, release, namespace, values...), "Deployment", fullname))
		c := d.Spec.Template.Spec.Containers[0]
		require.Equal(t, "serve", c.Args[0])
		for _, a := range c.Args[1:] {
			flag, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			assert.True(t, strings.HasPrefix(a, "--") && flags[flag], "%s values: %q is not a flag of mandate serve", name, a)
			checked++
		}
	}
	t.Logf("%d rendered arguments checked against %d flags of mandate serve", checked, len(flags))

	// mandate serve accepts the rendered bundle arguments: outside the pod
	// only the mounted files and directories are missing, and those are
	// the only keys its validation names.
	d := typed[appsv1.Deployment](t, find(t, render(t, release, namespace, bundleValues...), "Deployment", fullname))
	out, err := exec.CommandContext(ctx, bin, d.Spec.Template.Spec.Containers[0].Args...).CombinedOutput()
	require.Error(t, err, "mandate serve with the chart's bundle arguments outside a pod\n%s", out)
	var named []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n")[1:] {
		k, msg, _ := strings.Cut(line, ": ")
		named = append(named, k)
		assert.Regexp(t, `no such file or directory|is not a directory`, msg, "only missing paths are wrong: %s", line)
	}
	assert.ElementsMatch(t, []string{"webhook.certDir", "webhook.clientCAFile", "bundle.verificationKey", "bundle.persistDir", "bundle.bearerTokenFile", "bundle.caFile", "bundle.serviceConfig"}, named,
		"mandate serve %s:\n%s", strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "), out)
}
