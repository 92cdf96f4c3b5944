// Package chart tests the Helm chart in charts/mandate: it lints, renders
// with default and non-default values, checks the rendered objects (the
// webhook configurations against webhook.Configurations, the Go source of
// truth), checks that values.schema.json rejects bad values, and creates every
// rendered object on a real API server with cert-manager's CRDs installed.
//
// The helm binary is the pinned one hack/envtest-assets.sh builds into
// bin/k8s/helm; the tests fail, never skip, when it is missing.
package chart

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/test/chartqueries"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/webhook"
)

const (
	modulePath = "github.com/mandate-dev/mandate"
	chartDir   = chartqueries.ChartDir
	helmBinary = chartqueries.HelmBinary

	release   = "mandate"
	namespace = "mandate-system"

	// The names the default release renders.
	fullname      = "mandate"
	servingCert   = "mandate-serving"
	tlsSecretName = "mandate-tls"

	assetsInstruction = "run `make envtest-assets` (or `hack/envtest-assets.sh helm`) from the repository root"
)

// nonDefault are the non-default values: no cert-manager (so an existing
// Secret and CA bundle), ServiceMonitor and NetworkPolicy on, 3 replicas,
// failurePolicy Ignore and a longer timeout.
var nonDefault = []string{
	"--set", "certManager.enabled=false",
	"--set", "tls.secretName=mandate-serving-tls",
	"--set", "tls.caBundle=" + caBundle,
	"--set", "serviceMonitor.enabled=true",
	"--set", "networkPolicy.enabled=true",
	"--set", "replicaCount=3",
	"--set", "spread=hard",
	"--set", "webhook.failurePolicy=Ignore",
	"--set", "webhook.timeoutSeconds=10",
	"--set", "grafana.dashboard.enabled=true",
	"--set", "sync.enabled=true",
	"--set", "sync.mode=report",
	"--set", "sync.interval=2m",
	"--set", "sync.schedulers={volcano,kueue}",
	"--set", "webhook.clientAuth.caConfigMap=apiserver-client-ca",
	"--set", "webhook.clientAuth.commonName=",
}

// caBundle is base64 of a (placeholder) PEM block; the API server only
// checks that caBundle is valid base64.
const caBundle = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJ4ekNDQVcyZ0F3SUJBZ0lVZmFrZQotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg=="

// TestLint runs helm lint, plain and --strict, with default, non-default
// and bundle values.
func TestLint(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"default", nil},
		{"default strict", []string{"--strict"}},
		{"non-default strict", append([]string{"--strict"}, nonDefault...)},
		{"bundle strict", append([]string{"--strict"}, bundleValues...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helm(t, append([]string{"lint", chartDir}, tc.args...)...)
			if err != nil {
				t.Fatalf("helm lint %s: %v\n%s", strings.Join(tc.args, " "), err, out)
			}
			if !strings.Contains(out, "0 chart(s) failed") {
				t.Errorf("helm lint output does not report 0 failed charts:\n%s", out)
			}
		})
	}
}

// TestTemplateDefaults renders the default values and checks the facts an SRE
// relies on.
func TestTemplateDefaults(t *testing.T) {
	objs := render(t, release, namespace)

	t.Run("objects", func(t *testing.T) {
		want := []string{
			"ClusterRole/mandate", "ClusterRoleBinding/mandate", "ClusterRole/mandate-metrics-reader",
			// The authority metrics' reads and Lease.
			"ClusterRole/mandate-authority", "ClusterRoleBinding/mandate-authority", "Role/mandate-authority", "RoleBinding/mandate-authority",
			// The background audit's Reports and Lease.
			"ClusterRole/mandate-openreports", "ClusterRoleBinding/mandate-openreports", "Role/mandate-openreports", "RoleBinding/mandate-openreports",
			"Certificate/mandate-ca", "Certificate/mandate-serving", "Certificate/mandate-apiserver-client",
			"Deployment/mandate", "Issuer/mandate-ca", "Issuer/mandate-selfsigned",
			"MutatingWebhookConfiguration/mandate", "PodDisruptionBudget/mandate",
			"Service/mandate", "ServiceAccount/mandate", "ValidatingWebhookConfiguration/mandate",
			// The pre-delete hook (uninstallHook).
			"ServiceAccount/mandate-uninstall", "ClusterRole/mandate-uninstall", "ClusterRoleBinding/mandate-uninstall", "Job/mandate-uninstall",
		}
		assert.ElementsMatch(t, want, keys(objs))
		for _, o := range objs {
			switch o.GetKind() {
			case "ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
				assert.Empty(t, o.GetNamespace(), "%s is cluster-scoped", key(o))
			default:
				assert.Equal(t, namespace, o.GetNamespace(), "namespace of %s", key(o))
			}
		}
	})

	t.Run("webhook configurations mirror webhook.Configurations", func(t *testing.T) {
		wantM, wantV := webhook.Configurations(webhook.RegistrationOptions{
			Service:   &webhook.ServiceReference{Namespace: namespace, Name: fullname, Port: 443},
			Namespace: namespace,
		})
		gotM, gotV := webhookConfigurations(t, objs)
		assert.Equal(t, wantM.Webhooks, gotM.Webhooks)
		assert.Equal(t, wantV.Webhooks, gotV.Webhooks)
		for _, o := range []interface{ GetAnnotations() map[string]string }{gotM, gotV} {
			assert.Equal(t, namespace+"/"+servingCert, o.GetAnnotations()["cert-manager.io/inject-ca-from"])
		}
		for _, w := range gotM.Webhooks {
			assert.Empty(t, w.ClientConfig.CABundle, "%s caBundle is left to cert-manager's cainjector", w.Name)
		}
	})

	t.Run("certificates", func(t *testing.T) {
		serving := find(t, objs, "Certificate", servingCert)
		dns, _, _ := unstructured.NestedStringSlice(serving.Object, "spec", "dnsNames")
		assert.Contains(t, dns, fullname+"."+namespace+".svc")
		secret, _, _ := unstructured.NestedString(serving.Object, "spec", "secretName")
		assert.Equal(t, tlsSecretName, secret)
		issuer, _, _ := unstructured.NestedString(serving.Object, "spec", "issuerRef", "name")
		caIssuer := find(t, objs, "Issuer", issuer)
		caSecret, _, _ := unstructured.NestedString(caIssuer.Object, "spec", "ca", "secretName")
		ca := find(t, objs, "Certificate", "mandate-ca")
		isCA, _, _ := unstructured.NestedBool(ca.Object, "spec", "isCA")
		assert.True(t, isCA, "the CA Certificate is a CA")
		caCertSecret, _, _ := unstructured.NestedString(ca.Object, "spec", "secretName")
		assert.Equal(t, caCertSecret, caSecret, "the CA Issuer signs with the CA Certificate's Secret")
		selfSigned, _, _ := unstructured.NestedString(ca.Object, "spec", "issuerRef", "name")
		_, found, _ := unstructured.NestedMap(find(t, objs, "Issuer", selfSigned).Object, "spec", "selfSigned")
		assert.True(t, found, "the CA is signed by a selfSigned Issuer")
	})

	t.Run("only the API server may call the webhooks", func(t *testing.T) {
		// serve requires a client certificate from the chart's CA (the
		// serving Secret's ca.crt) for the API server's name; the same CA
		// issues that certificate for the control plane to present.
		args := typed[appsv1.Deployment](t, find(t, objs, "Deployment", fullname)).Spec.Template.Spec.Containers[0].Args
		assert.Contains(t, args, "--client-ca-file=/tls/ca.crt")
		assert.Contains(t, args, "--client-cn=kube-apiserver")
		client := find(t, objs, "Certificate", "mandate-apiserver-client")
		cn, _, _ := unstructured.NestedString(client.Object, "spec", "commonName")
		assert.Equal(t, "kube-apiserver", cn)
		usages, _, _ := unstructured.NestedStringSlice(client.Object, "spec", "usages")
		assert.Contains(t, usages, "client auth")
		issuer, _, _ := unstructured.NestedString(client.Object, "spec", "issuerRef", "name")
		serving := find(t, objs, "Certificate", servingCert)
		servingIssuer, _, _ := unstructured.NestedString(serving.Object, "spec", "issuerRef", "name")
		assert.Equal(t, servingIssuer, issuer, "one CA signs the serving certificate and the API server's client certificate")

		off := render(t, release, namespace, "--set", "webhook.clientAuth.enabled=false")
		for _, arg := range typed[appsv1.Deployment](t, find(t, off, "Deployment", fullname)).Spec.Template.Spec.Containers[0].Args {
			assert.NotContains(t, arg, "--client-", "clientAuth off")
		}
		assert.NotContains(t, keys(off), "Certificate/mandate-apiserver-client")
	})

	t.Run("deployment", func(t *testing.T) {
		d := typed[appsv1.Deployment](t, find(t, objs, "Deployment", fullname))
		checkDeployment(t, d, 2, tlsSecretName)
		spec := d.Spec.Template.Spec
		require.NotNil(t, spec.Affinity)
		require.NotNil(t, spec.Affinity.PodAntiAffinity)
		assert.NotEmpty(t, spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, "soft spread by default")
	})

	t.Run("service", func(t *testing.T) {
		s := typed[corev1.Service](t, find(t, objs, "Service", fullname))
		ports := map[string]corev1.ServicePort{}
		for _, p := range s.Spec.Ports {
			ports[p.Name] = p
		}
		assert.Equal(t, int32(443), ports["https"].Port)
		assert.Equal(t, "webhook", ports["https"].TargetPort.StrVal)
		assert.Equal(t, "metrics", ports["metrics"].TargetPort.StrVal)
	})

	t.Run("pod disruption budget", func(t *testing.T) {
		pdb := typed[policyv1.PodDisruptionBudget](t, find(t, objs, "PodDisruptionBudget", fullname))
		require.NotNil(t, pdb.Spec.MinAvailable)
		assert.Equal(t, 1, pdb.Spec.MinAvailable.IntValue())
		d := typed[appsv1.Deployment](t, find(t, objs, "Deployment", fullname))
		assert.Equal(t, d.Spec.Selector.MatchLabels, pdb.Spec.Selector.MatchLabels, "the PDB selects the webhook pods")
	})

	t.Run("rbac is least privilege", func(t *testing.T) {
		checkRBAC(t, objs)
	})

	t.Run("GOMEMLIMIT leaves headroom below the memory limit", func(t *testing.T) {
		limit := func(objs []*unstructured.Unstructured) string {
			d := typed[appsv1.Deployment](t, find(t, objs, "Deployment", fullname))
			for _, e := range d.Spec.Template.Spec.Containers[0].Env {
				if e.Name == "GOMEMLIMIT" {
					return e.Value
				}
			}
			return ""
		}
		assert.Equal(t, "966367641", limit(objs), "90% of 1Gi")
		assert.Equal(t, strconv.Itoa(fixtures.ChartGoMemLimit), limit(objs), "test/fixtures holds the chart's figure")
		assert.Equal(t, "1717986918", limit(render(t, release, namespace, "--set", "resources.limits.memory=2048Mi", "--set", "goMemLimitPercent=80")))
		assert.Equal(t, "1800000000", limit(render(t, release, namespace, "--set", "resources.limits.memory=2G")))
		assert.Empty(t, limit(render(t, release, namespace, "--set", "resources.limits.memory=null")), "no limit, no GOMEMLIMIT")
	})

	t.Run("the admission budget follows the memory limit", func(t *testing.T) {
		budget := func(objs []*unstructured.Unstructured) string {
			d := typed[appsv1.Deployment](t, find(t, objs, "Deployment", fullname))
			for _, a := range d.Spec.Template.Spec.Containers[0].Args {
				if v, ok := strings.CutPrefix(a, "--max-in-flight-bytes="); ok {
					return v
				}
			}
			return ""
		}
		assert.Equal(t, strconv.Itoa(config.DefaultMaxInFlightBytes), budget(objs), "a 128th of 1Gi, serve's own default")
		assert.Equal(t, "33554432", budget(render(t, release, namespace, "--set", "resources.limits.memory=4Gi")))
		assert.Equal(t, "1048576", budget(render(t, release, namespace, "--set", "resources.limits.memory=64Mi")), "at least 1 MiB")
		assert.Equal(t, "2000000", budget(render(t, release, namespace, "--set", "webhook.maxInFlightBytes=2000000")), "set, as set")
		assert.Empty(t, budget(render(t, release, namespace, "--set", "resources.limits.memory=null")), "no limit: serve's default")
	})
}

// TestTemplateNonDefault renders the non-default values.
func TestTemplateNonDefault(t *testing.T) {
	objs := render(t, release, namespace, nonDefault...)

	for _, k := range []string{"Certificate", "Issuer"} {
		for _, o := range objs {
			assert.NotEqual(t, k, o.GetKind(), "no cert-manager object without certManager.enabled: %s", key(o))
		}
	}
	find(t, objs, "ServiceMonitor", fullname)
	find(t, objs, "NetworkPolicy", fullname)
	find(t, objs, "PodDisruptionBudget", fullname)

	m, v := webhookConfigurations(t, objs)
	for _, o := range []interface{ GetAnnotations() map[string]string }{m, v} {
		assert.NotContains(t, o.GetAnnotations(), "cert-manager.io/inject-ca-from")
	}
	ignore := admissionregistrationv1.Ignore
	wantM, wantV := webhook.Configurations(webhook.RegistrationOptions{
		Service:        &webhook.ServiceReference{Namespace: namespace, Name: fullname, Port: 443},
		Namespace:      namespace,
		CABundle:       m.Webhooks[0].ClientConfig.CABundle,
		FailurePolicy:  &ignore,
		TimeoutSeconds: 10,
	})
	assert.Equal(t, wantM.Webhooks, m.Webhooks, "mirror webhook.Configurations with Ignore, 10s and the caBundle")
	assert.Equal(t, wantV.Webhooks, v.Webhooks, "mirror webhook.Configurations with Ignore, 10s and the caBundle")
	type hook struct {
		name    string
		fp      *admissionregistrationv1.FailurePolicyType
		timeout *int32
		cc      admissionregistrationv1.WebhookClientConfig
	}
	var hooks []hook
	for _, w := range m.Webhooks {
		hooks = append(hooks, hook{w.Name, w.FailurePolicy, w.TimeoutSeconds, w.ClientConfig})
	}
	for _, w := range v.Webhooks {
		hooks = append(hooks, hook{w.Name, w.FailurePolicy, w.TimeoutSeconds, w.ClientConfig})
	}
	// mutate, validate, namespaces and the eviction guard (whose
	// failurePolicy is Ignore whatever the values say).
	require.Len(t, hooks, 4)
	for _, h := range hooks {
		require.NotNil(t, h.fp, h.name)
		require.NotNil(t, h.timeout, h.name)
		assert.Equal(t, admissionregistrationv1.Ignore, *h.fp, "%s failurePolicy", h.name)
		assert.Equal(t, int32(10), *h.timeout, "%s timeoutSeconds", h.name)
		assert.NotEmpty(t, h.cc.CABundle, "%s caBundle from tls.caBundle", h.name)
	}

	d := typed[appsv1.Deployment](t, find(t, objs, "Deployment", fullname))
	checkDeployment(t, d, 3, "mandate-serving-tls")
	spec := d.Spec.Template.Spec
	// The API server's client CA from the operator's ConfigMap, any name.
	assert.Contains(t, spec.Containers[0].Args, "--client-ca-file=/etc/mandate/client-ca/ca.crt")
	for _, arg := range spec.Containers[0].Args {
		assert.NotContains(t, arg, "--client-cn", "commonName empty: any certificate the CA signed")
	}
	assert.Contains(t, spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "client-ca", MountPath: "/etc/mandate/client-ca", ReadOnly: true})
	clientCA := false
	for _, v := range spec.Volumes {
		if v.Name == "client-ca" {
			clientCA = v.ConfigMap != nil && v.ConfigMap.Name == "apiserver-client-ca"
		}
	}
	assert.True(t, clientCA, "the client-ca volume is the ConfigMap")
	require.NotNil(t, spec.Affinity)
	require.NotNil(t, spec.Affinity.PodAntiAffinity)
	assert.NotEmpty(t, spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, "spread=hard")
	checkRBAC(t, objs)
}

// TestTemplatePolicies: policy files from values become a ConfigMap mounted
// at /policies, keeping their directories, and serve is told --policies.
func TestTemplatePolicies(t *testing.T) {
	objs := render(t, release, namespace, "--set", "policies.source=configMap",
		"--set-string", `policies.configMap.files.mandate/quota/quota\.rego=package mandate.quota`)
	cm := typed[corev1.ConfigMap](t, find(t, objs, "ConfigMap", fullname+"-policies"))
	assert.Equal(t, map[string]string{"mandate__quota__quota.rego": "package mandate.quota"}, cm.Data)
	d := typed[appsv1.Deployment](t, find(t, objs, "Deployment", fullname))
	c := d.Spec.Template.Spec.Containers[0]
	assert.Contains(t, c.Args, "--policies=/policies")
	assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "policies", MountPath: "/policies", ReadOnly: true})
	var vol *corev1.Volume
	for i := range d.Spec.Template.Spec.Volumes {
		if d.Spec.Template.Spec.Volumes[i].Name == "policies" {
			vol = &d.Spec.Template.Spec.Volumes[i]
		}
	}
	require.NotNil(t, vol)
	require.NotNil(t, vol.ConfigMap)
	assert.Equal(t, cm.Name, vol.ConfigMap.Name)
	assert.Equal(t, []corev1.KeyToPath{{Key: "mandate__quota__quota.rego", Path: "mandate/quota/quota.rego"}}, vol.ConfigMap.Items)

	// The demo model is the embedded one: no --policies, no ConfigMap.
	d = typed[appsv1.Deployment](t, find(t, render(t, release, namespace), "Deployment", fullname))
	for _, arg := range d.Spec.Template.Spec.Containers[0].Args {
		assert.NotContains(t, arg, "--policies")
	}
}

// TestValuesRejected: the schema (and the templates' own checks) reject bad
// values with a message naming the key.
func TestValuesRejected(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"failurePolicy Sometimes", []string{"--set", "webhook.failurePolicy=Sometimes"}, "/webhook/failurePolicy"},
		{"unknown top-level key", []string{"--set", "replicas=3"}, "additional properties 'replicas' not allowed"},
		{"unknown nested key", []string{"--set", "webhook.timeout=3"}, "additional properties 'timeout' not allowed"},
		{"timeoutSeconds above 30", []string{"--set", "webhook.timeoutSeconds=31"}, "/webhook/timeoutSeconds"},
		{"openReports.maxResults 0", []string{"--set", "openReports.maxResults=0"}, "/openReports/maxResults"},
		{"openReports.interval not a duration", []string{"--set", "openReports.interval=hourly"}, "/openReports/interval"},
		{"timeoutSeconds as a string", []string{"--set-string", "webhook.timeoutSeconds=3"}, "/webhook/timeoutSeconds"},
		{"no cert-manager and no TLS", []string{"--set", "certManager.enabled=false"}, "tls.secretName"},
		{"no cert-manager and no CA bundle", []string{"--set", "certManager.enabled=false", "--set", "tls.secretName=s"}, "tls.caBundle"},
		{"client authentication without cert-manager and without a CA", []string{"--set", "certManager.enabled=false", "--set", "tls.secretName=s", "--set", "tls.caBundle=" + caBundle},
			"webhook.clientAuth.enabled is true without cert-manager: set webhook.clientAuth.caConfigMap"},
		{"client authentication in selfSigned mode without a CA", []string{"--set", "certs.mode=selfSigned"}, "webhook.clientAuth.caConfigMap"},
		{"policy ConfigMap without files", []string{"--set", "policies.source=configMap"}, "policies.configMap.name"},
		{"bundle without a URL", []string{"--set", "policies.source=bundle"},
			"policies.source is bundle: set policies.bundle.url to the http(s), s3:// or oci:// URL of the policy bundle"},
		{"signature required without a key", []string{"--set", "policies.source=bundle", "--set", "policies.bundle.url=" + bundleURL, "--set", "policies.bundle.requireSignature=true"},
			"policies.bundle.requireSignature is true: set policies.bundle.verificationKey.secretName"},
		{"bundle URL neither http, s3 nor oci", []string{"--set", "policies.source=bundle", "--set", "policies.bundle.url=gs://b/m.tar.gz"}, "/policies/bundle/url"},
		{"shadow URL a path", []string{"--set", "policies.shadow.url=/bundles/c.tar.gz"}, "/policies/shadow/url"},
		{"interval not a duration", []string{"--set", "policies.bundle.interval=often"}, "/policies/bundle/interval"},
		{"evaluation timeout not a duration", []string{"--set", "evaluation.timeout=fast"}, "/evaluation/timeout"},
		{"old signingKeySecret", []string{"--set", "policies.bundle.signingKeySecret=k"}, "additional properties 'signingKeySecret' not allowed"},
		{"unknown source", []string{"--set", "policies.source=oci"}, "/policies/source"},
		{"memory limit GOMEMLIMIT cannot be derived from", []string{"--set", "resources.limits.memory=1.5Gi"}, "to derive GOMEMLIMIT from"},
		{"goMemLimitPercent above 100", []string{"--set", "goMemLimitPercent=120"}, "/goMemLimitPercent"},
		{"admission budget below 1 MiB", []string{"--set", "webhook.maxInFlightBytes=1000"}, "/webhook/maxInFlightBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helm(t, append([]string{"template", release, chartDir, "--namespace", namespace}, tc.args...)...)
			if err == nil {
				t.Fatalf("helm template %s succeeded, want an error naming %q", strings.Join(tc.args, " "), tc.want)
			}
			assert.Contains(t, out, tc.want)
		})
	}
}

// TestApply creates every object of the default release on a real API
// server with cert-manager's CRDs installed (and the Volcano and KAI ones by
// default), and the non-default release's objects (but its ServiceMonitor:
// the Prometheus Operator's CRDs are not installed). The webhook
// configurations are created last: nothing serves them, and with
// failurePolicy Fail they would otherwise stand in the way of the test's own
// creates.
func TestApply(t *testing.T) {
	defaults := render(t, release, namespace)
	other := render(t, "other", "other-system", nonDefault...)
	env := envtest.Start(t, envtest.WithCertManagerCRDs())
	ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(time.Minute))
	defer cancel()

	for _, ns := range []string{namespace, "other-system"} {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("v1")
		obj.SetKind("Namespace")
		obj.SetName(ns)
		require.NoError(t, env.Client.Create(ctx, obj), "create Namespace %s", ns)
	}
	var last, first []*unstructured.Unstructured
	for _, o := range append(defaults, other...) {
		switch o.GetKind() {
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			last = append(last, o)
		case "ServiceMonitor":
			t.Logf("not applied: %s (no Prometheus Operator CRDs)", key(o))
		default:
			first = append(first, o)
		}
	}
	var rejected []string
	for _, o := range append(first, last...) {
		if err := env.Client.Create(ctx, o.DeepCopy()); err != nil {
			rejected = append(rejected, fmt.Sprintf("%s (namespace %q): %v", key(o), o.GetNamespace(), err))
			continue
		}
	}
	if len(rejected) > 0 {
		t.Fatalf("the API server rejected %d of %d objects:\n%s", len(rejected), len(first)+len(last), strings.Join(rejected, "\n"))
	}
	t.Logf("the API server accepted all %d objects", len(first)+len(last))

	// What was stored is what was rendered: the API server kept the
	// webhooks' policy (no defaulting surprise).
	stored := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: fullname}, stored))
	require.Len(t, stored.Webhooks, 3)
	for _, w := range stored.Webhooks {
		want := admissionregistrationv1.Fail
		if w.Name == webhook.EvictionWebhookName {
			// An unavailable Mandate never blocks a drain.
			want = admissionregistrationv1.Ignore
		}
		assert.Equal(t, want, *w.FailurePolicy, w.Name)
		assert.Equal(t, webhook.DefaultTimeoutSeconds, *w.TimeoutSeconds, w.Name)
	}
}

// checkDeployment checks the pod spec facts every rendering must have.
func checkDeployment(t *testing.T, d *appsv1.Deployment, replicas int32, secret string) {
	t.Helper()
	require.NotNil(t, d.Spec.Replicas)
	assert.Equal(t, replicas, *d.Spec.Replicas, "replicas")
	spec := d.Spec.Template.Spec
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]

	require.NotNil(t, spec.SecurityContext)
	require.NotNil(t, spec.SecurityContext.RunAsNonRoot)
	assert.True(t, *spec.SecurityContext.RunAsNonRoot, "pod runAsNonRoot")
	sc := c.SecurityContext
	require.NotNil(t, sc, "container securityContext")
	require.NotNil(t, sc.RunAsNonRoot)
	require.NotNil(t, sc.ReadOnlyRootFilesystem)
	require.NotNil(t, sc.AllowPrivilegeEscalation)
	require.NotNil(t, sc.Capabilities)
	require.NotNil(t, sc.SeccompProfile)
	assert.True(t, *sc.RunAsNonRoot, "runAsNonRoot")
	assert.True(t, *sc.ReadOnlyRootFilesystem, "readOnlyRootFilesystem")
	assert.False(t, *sc.AllowPrivilegeEscalation, "allowPrivilegeEscalation")
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop, "capabilities.drop")
	assert.Empty(t, sc.Capabilities.Add, "capabilities.add")
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type, "seccompProfile")

	assert.Equal(t, "serve", c.Args[0])
	for _, arg := range []string{"--cert-dir=/tls", "--port=9443", "--health-addr=:8081", "--metrics-addr=:8080",
		"--namespace=" + namespace, "--admin-groups=system:masters,mandate-admins"} {
		assert.Contains(t, c.Args, arg)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	assert.Equal(t, map[string]int32{"webhook": 9443, "health": 8081, "metrics": 8080}, ports)

	require.NotNil(t, c.ReadinessProbe)
	require.NotNil(t, c.ReadinessProbe.HTTPGet)
	assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, "health", c.ReadinessProbe.HTTPGet.Port.String())
	require.NotNil(t, c.LivenessProbe)
	require.NotNil(t, c.LivenessProbe.HTTPGet)
	assert.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	assert.Equal(t, "health", c.LivenessProbe.HTTPGet.Port.String())

	assert.False(t, c.Resources.Requests.Cpu().IsZero(), "cpu request")
	assert.False(t, c.Resources.Requests.Memory().IsZero(), "memory request")

	require.NotEmpty(t, spec.TopologySpreadConstraints)
	assert.Equal(t, "kubernetes.io/hostname", spec.TopologySpreadConstraints[0].TopologyKey)

	var tlsVolume *corev1.Volume
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == "tls" {
			tlsVolume = &spec.Volumes[i]
		}
	}
	require.NotNil(t, tlsVolume, "tls volume")
	require.NotNil(t, tlsVolume.Secret, "tls volume is a Secret")
	assert.Equal(t, secret, tlsVolume.Secret.SecretName)
	assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "tls", MountPath: "/tls", ReadOnly: true})
}

// checkRBAC: one ClusterRole bound to the ServiceAccount, no wildcard, no
// Secrets, writes only on Volcano PodGroups and owners' finalizers.
func checkRBAC(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	role := typed[rbacv1.ClusterRole](t, find(t, objs, "ClusterRole", fullname))
	read := []string{"get", "list", "watch"}
	for _, r := range role.Rules {
		for _, list := range [][]string{r.Verbs, r.Resources, r.APIGroups} {
			assert.NotContains(t, list, "*", "wildcard in rule %+v", r)
		}
		assert.NotContains(t, r.Resources, "secrets", "no access to Secrets")
		assert.Empty(t, r.NonResourceURLs)
		assert.Empty(t, r.ResourceNames)
		for _, res := range r.Resources {
			switch {
			case res == "podgroups":
				assert.Equal(t, []string{"scheduling.volcano.sh"}, r.APIGroups)
			case strings.HasSuffix(res, "/finalizers"):
				assert.Equal(t, []string{"update"}, r.Verbs, "only update on %s", res)
			case res == "tenantledgers":
				// The shared quota ledger (quota.shared): read, created
				// once per tenant tree, committed by update, listed for the
				// authority metrics' reserved GPUs; never deleted.
				assert.Equal(t, []string{"mandate.dev"}, r.APIGroups)
				assert.ElementsMatch(t, []string{"get", "list", "create", "update"}, r.Verbs)
			case res == "pods" && slices.Contains(r.Verbs, "delete"):
				// The gang-whole controller (package gangpreempt)
				// deletes the rest of a gang a scheduler preempted part
				// of; in a rule of its own, nothing else.
				assert.Equal(t, []string{""}, r.APIGroups)
				assert.Equal(t, []string{"pods"}, r.Resources)
				assert.Equal(t, []string{"delete"}, r.Verbs, "only delete on pods")
			case res == "tokenreviews" || res == "subjectaccessreviews":
				// --metrics-auth delegates authentication and
				// authorisation of scrapers to the API server.
				assert.Equal(t, []string{"create"}, r.Verbs, "only create on %s", res)
			default:
				for _, v := range r.Verbs {
					assert.Contains(t, read, v, "%s on %s is not a read", v, res)
				}
			}
		}
	}
	has := func(group, resource, verb string) bool {
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
		return false
	}
	for _, need := range [][3]string{
		{"", "nodes", "watch"}, {"", "pods", "watch"}, {"", "namespaces", "watch"},
		{"batch", "jobs", "get"}, {"kubeflow.org", "pytorchjobs", "get"}, {"batch.volcano.sh", "jobs", "get"},
		{"scheduling.volcano.sh", "podgroups", "create"}, {"scheduling.volcano.sh", "podgroups", "update"},
		{"", "pods/finalizers", "update"}, {"batch", "jobs/finalizers", "update"}, {"kubeflow.org", "pytorchjobs/finalizers", "update"},
		{"resource.k8s.io", "resourceclaimtemplates", "watch"}, {"resource.k8s.io", "resourceclaims", "watch"},
		{"resource.k8s.io", "resourceslices", "watch"}, {"resource.k8s.io", "deviceclasses", "watch"},
	} {
		assert.True(t, has(need[0], need[1], need[2]), "the ClusterRole allows %s on %s.%s", need[2], need[1], need[0])
	}
	if reader := findOptional(objs, "ClusterRole", fullname+"-metrics-reader"); reader != nil {
		r := typed[rbacv1.ClusterRole](t, reader)
		assert.Equal(t, []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics", "/bundle/status"}, Verbs: []string{"get"}}}, r.Rules,
			"the metrics reader may read the two paths and nothing else")
	}
	binding := typed[rbacv1.ClusterRoleBinding](t, find(t, objs, "ClusterRoleBinding", fullname))
	assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name}, binding.RoleRef)
	require.Len(t, binding.Subjects, 1)
	sa := find(t, objs, "ServiceAccount", binding.Subjects[0].Name)
	assert.Equal(t, sa.GetNamespace(), binding.Subjects[0].Namespace)
}

func webhookConfigurations(t *testing.T, objs []*unstructured.Unstructured) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	return typed[admissionregistrationv1.MutatingWebhookConfiguration](t, find(t, objs, "MutatingWebhookConfiguration", fullname)),
		typed[admissionregistrationv1.ValidatingWebhookConfiguration](t, find(t, objs, "ValidatingWebhookConfiguration", fullname))
}

// render runs helm template and decodes every document.
func render(t *testing.T, name, ns string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	out, err := helm(t, append([]string{"template", name, chartDir, "--namespace", ns}, args...)...)
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(strings.NewReader(out)), 4096)
	for {
		obj := map[string]any{}
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding the rendered chart: %v\n%s", err, out)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			t.Fatalf("rendered document without apiVersion, kind or name: %v", obj)
		}
		objs = append(objs, u)
	}
	if len(objs) == 0 {
		t.Fatalf("helm template rendered nothing")
	}
	return objs
}

// typed converts an unstructured object strictly: a field the type does not
// know fails the test (a typo in a template would otherwise pass unseen).
func typed[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		t.Fatalf("%s: %v", key(u), err)
	}
	return out
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	o := findOptional(objs, kind, name)
	if o == nil {
		t.Fatalf("no %s/%s rendered; got %v", kind, name, keys(objs))
	}
	return o
}

// findOptional is the rendered object of that kind and name, or nil.
func findOptional(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func key(o *unstructured.Unstructured) string { return o.GetKind() + "/" + o.GetName() }

func keys(objs []*unstructured.Unstructured) []string {
	var ks []string
	for _, o := range objs {
		ks = append(ks, key(o))
	}
	return ks
}

// modelValues is the one value the chart has no default for, the policy
// source: helm template and helm lint run with it before the test's own
// values (which may set another source). The demo model renders what a
// source-less chart used to; TestInstall takes its model from a ConfigMap.
var modelValues = []string{"--set", "policies.source=embedded-demo"}

// helm runs the pinned helm binary from the repository root and returns its
// combined output; template and lint get modelValues first.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if len(args) > 0 && (args[0] == "template" || args[0] == "lint") {
		args = append(append([]string{args[0]}, modelValues...), args[1:]...)
	}
	return helmBare(t, args...)
}

// helmBare runs the pinned helm binary from the repository root with
// exactly args and returns its combined output.
func helmBare(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := envtest.RepoRoot(t)
	bin := filepath.Join(root, helmBinary)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("helm not found at %s: %s", bin, assetsInstruction)
	}
	ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = root
	// No user configuration, plugins or repositories leak into the test.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	return buf.String(), err
}

// TestTemplateOpenReports: the background audit is on by default, with its
// interval and cap passed to serve and the RBAC to write Reports; off, the
// flag says so and no RBAC is granted.
func TestTemplateOpenReports(t *testing.T) {
	objs := render(t, release, namespace, "--set", "openReports.interval=30s", "--set", "openReports.maxResults=200")
	args := typed[appsv1.Deployment](t, find(t, objs, "Deployment", fullname)).Spec.Template.Spec.Containers[0].Args
	assert.Contains(t, args, "--open-reports=true")
	assert.Contains(t, args, "--open-reports-interval=30s")
	assert.Contains(t, args, "--open-reports-max-results=200")
	role := typed[rbacv1.ClusterRole](t, find(t, objs, "ClusterRole", fullname+"-openreports"))
	require.Len(t, role.Rules, 1)
	assert.Equal(t, []string{"openreports.io"}, role.Rules[0].APIGroups)
	assert.Equal(t, []string{"reports"}, role.Rules[0].Resources)
	assert.Subset(t, role.Rules[0].Verbs, []string{"list", "create", "patch", "delete"}, "server-side apply creates and patches; empty Reports are deleted")

	off := render(t, release, namespace, "--set", "openReports.enabled=false")
	offArgs := typed[appsv1.Deployment](t, find(t, off, "Deployment", fullname)).Spec.Template.Spec.Containers[0].Args
	assert.Contains(t, offArgs, "--open-reports=false")
	for _, arg := range offArgs {
		assert.NotContains(t, arg, "--open-reports-", "no interval or cap when off")
	}
	assert.NotContains(t, keys(off), "ClusterRole/"+fullname+"-openreports")
}
