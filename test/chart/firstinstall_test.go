package chart

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/webhook"
	"github.com/mandate-dev/mandate/workload"
)

// TestTemplateFirstInstall: what the defaults give an SRE installing into
// a cluster that already runs other work.
func TestTemplateFirstInstall(t *testing.T) {
	t.Run("no model, no install", func(t *testing.T) {
		out, err := helmBare(t, "template", release, chartDir, "--namespace", namespace)
		require.Error(t, err, "the chart has no model of its own to install")
		for _, want := range []string{"policies.source is not set", "policies.source=configMap", "policies.configMap.name",
			"policies.source=bundle", "policies.source=embedded-demo"} {
			assert.Contains(t, out, want)
		}
		out, err = helmBare(t, "template", release, chartDir, "--namespace", namespace, "--set", "policies.source=embedded")
		require.Error(t, err, "the demo model is only behind its explicit name")
		assert.Contains(t, out, "/policies/source")
	})

	objs := render(t, release, namespace)
	d := typed[appsv1.Deployment](t, find(t, objs, "Deployment", fullname))
	args := d.Spec.Template.Spec.Containers[0].Args

	t.Run("dryrun until told to enforce", func(t *testing.T) {
		assert.Contains(t, args, "--enforcement-override=dryrun")
		d := typed[appsv1.Deployment](t, find(t, render(t, release, namespace, "--set", "enforcementOverride="), "Deployment", fullname))
		for _, a := range d.Spec.Template.Spec.Containers[0].Args {
			assert.NotContains(t, a, "--enforcement-override", "enforcementOverride \"\" enforces the model")
		}
	})

	t.Run("only tenant-labelled namespaces are governed", func(t *testing.T) {
		m, v := webhookConfigurations(t, objs)
		excluded := metav1.LabelSelectorRequirement{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn,
			Values: []string{"kube-system", "kube-public", "kube-node-lease", namespace}}
		want := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: workload.LabelTenant, Operator: metav1.LabelSelectorOpExists}, excluded}}
		assert.Equal(t, want, m.Webhooks[0].NamespaceSelector, webhook.MutatingWebhookName)
		assert.Equal(t, want, v.Webhooks[0].NamespaceSelector, webhook.ValidatingWebhookName)
		require.Equal(t, webhook.NamespaceWebhookName, v.Webhooks[1].Name)
		assert.Equal(t, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{namespace}}}},
			v.Webhooks[1].NamespaceSelector, "the tenant label is guarded on every namespace, labelled or not")

		// Another selector: kept, the exclusions added.
		m, _ = webhookConfigurations(t, render(t, release, namespace, "--set-json",
			`webhook.namespaceSelector={"matchLabels":{"gpu":"yes"},"matchExpressions":[{"key":"team","operator":"In","values":["a"]}]}`))
		assert.Equal(t, &metav1.LabelSelector{MatchLabels: map[string]string{"gpu": "yes"}, MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"a"}}, excluded}}, m.Webhooks[0].NamespaceSelector)
		// No expressions: every namespace but the excluded ones. (A map
		// given in values merges into the default; a list replaces it.)
		m, _ = webhookConfigurations(t, render(t, release, namespace, "--set-json", `webhook.namespaceSelector.matchExpressions=[]`))
		assert.Equal(t, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{excluded}}, m.Webhooks[0].NamespaceSelector)
	})

	t.Run("one replica never blocks a drain", func(t *testing.T) {
		pdb := typed[policyv1.PodDisruptionBudget](t, find(t, render(t, release, namespace, "--set", "replicaCount=1"), "PodDisruptionBudget", fullname))
		assert.Nil(t, pdb.Spec.MinAvailable)
		require.NotNil(t, pdb.Spec.MaxUnavailable)
		assert.Equal(t, 1, pdb.Spec.MaxUnavailable.IntValue())
		out, err := helm(t, "template", release, chartDir, "--namespace", namespace, "--set", "podDisruptionBudget.minAvailable=2")
		require.Error(t, err, "minAvailable 2 of 2 replicas")
		assert.Contains(t, out, "podDisruptionBudget.minAvailable (2) must be less than replicaCount (2)")
	})

	t.Run("the pre-delete hook", func(t *testing.T) {
		name := fullname + "-uninstall"
		for _, kind := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Job"} {
			o := find(t, objs, kind, name)
			assert.Equal(t, "pre-delete", o.GetAnnotations()["helm.sh/hook"], "%s is a pre-delete hook", kind)
			assert.Equal(t, "before-hook-creation,hook-succeeded", o.GetAnnotations()["helm.sh/hook-delete-policy"], kind)
		}
		role := typed[rbacv1.ClusterRole](t, find(t, objs, "ClusterRole", name))
		assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{"admissionregistration.k8s.io"},
			Resources:     []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"},
			ResourceNames: []string{fullname}, Verbs: []string{"delete"}}}, role.Rules, "only delete, only Mandate's two")
		binding := typed[rbacv1.ClusterRoleBinding](t, find(t, objs, "ClusterRoleBinding", name))
		assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: namespace}}, binding.Subjects)
		job := typed[batchv1.Job](t, find(t, objs, "Job", name))
		spec := job.Spec.Template.Spec
		assert.Equal(t, name, spec.ServiceAccountName)
		assert.Equal(t, corev1.RestartPolicyNever, spec.RestartPolicy)
		require.Len(t, spec.Containers, 1)
		c := spec.Containers[0]
		assert.Equal(t, d.Spec.Template.Spec.Containers[0].Image, c.Image, "the mandate image itself")
		assert.Empty(t, c.Command, "the image's entrypoint, mandate")
		assert.Equal(t, []string{"uninstall", "--webhook-configuration=" + fullname}, c.Args)
		require.NotNil(t, c.SecurityContext)
		assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
		assert.True(t, *c.SecurityContext.RunAsNonRoot)

		for _, o := range render(t, release, namespace, "--set", "uninstallHook.enabled=false") {
			assert.NotEqual(t, name, o.GetName(), "uninstallHook.enabled=false renders no %s", key(o))
		}
	})

	t.Run("the conventions of Kueue's and Gatekeeper's charts", func(t *testing.T) {
		objs := render(t, release, namespace,
			"--set", "priorityClassName=system-cluster-critical",
			"--set", "logLevel=debug",
			"--set", "extraArgs[0]=--decision-log-sample-rate=0.1",
			"--set", "extraEnv[0].name=MANDATE_EVALUATION_TIMEOUT", "--set", "extraEnv[0].value=250ms",
			"--set", "nodeSelector.node-role\\.kubernetes\\.io/control-plane=",
			"--set", "tolerations[0].key=node-role.kubernetes.io/control-plane", "--set", "tolerations[0].operator=Exists",
			"--set", "tolerations[0].effect=NoSchedule",
			"--set-json", `affinity={"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/arch","operator":"In","values":["amd64"]}]}]}}}`,
			"--set", "resources.requests.cpu=200m", "--set", "resources.requests.memory=512Mi",
		)
		d := typed[appsv1.Deployment](t, find(t, objs, "Deployment", fullname))
		spec := d.Spec.Template.Spec
		c := spec.Containers[0]
		assert.Equal(t, "system-cluster-critical", spec.PriorityClassName)
		assert.Contains(t, c.Args, "--log-level=debug")
		assert.Equal(t, "--decision-log-sample-rate=0.1", c.Args[len(c.Args)-1], "extra arguments come last, so they win")
		assert.Contains(t, c.Env, corev1.EnvVar{Name: "MANDATE_EVALUATION_TIMEOUT", Value: "250ms"})
		assert.Equal(t, map[string]string{"node-role.kubernetes.io/control-plane": ""}, spec.NodeSelector)
		assert.Equal(t, []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoSchedule}}, spec.Tolerations)
		require.NotNil(t, spec.Affinity.NodeAffinity)
		assert.NotNil(t, spec.Affinity.PodAntiAffinity, "the spread's anti-affinity stays")
		assert.Equal(t, "200m", c.Resources.Requests.Cpu().String())
		job := typed[batchv1.Job](t, find(t, objs, "Job", fullname+"-uninstall"))
		assert.Equal(t, "system-cluster-critical", job.Spec.Template.Spec.PriorityClassName, "the hook runs wherever serve could")
		assert.Equal(t, spec.NodeSelector, job.Spec.Template.Spec.NodeSelector)
		assert.Equal(t, spec.Tolerations, job.Spec.Template.Spec.Tolerations)

		// The defaults add none of it.
		for _, a := range args {
			assert.False(t, strings.HasPrefix(a, "--log-level"), "no --log-level by default: %s", a)
		}
	})

	t.Run("values rejected", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			args []string
			want string
		}{
			{"enforcementOverride off", []string{"--set", "enforcementOverride=off"}, "/enforcementOverride"},
			{"logLevel verbose", []string{"--set", "logLevel=verbose"}, "/logLevel"},
			{"extraArgs not a flag", []string{"--set", "extraArgs[0]=serve"}, "/extraArgs/0"},
			{"extraEnv without a name", []string{"--set", "extraEnv[0].value=x"}, "/extraEnv/0"},
			{"namespaceSelector operator", []string{"--set-json", `webhook.namespaceSelector={"matchExpressions":[{"key":"a","operator":"Has"}]}`},
				"/webhook/namespaceSelector/matchExpressions/0/operator"},
			{"namespaceSelector unknown field", []string{"--set-json", `webhook.namespaceSelector={"matchNames":["a"]}`}, "matchNames"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				out, err := helm(t, append([]string{"template", release, chartDir, "--namespace", namespace}, tc.args...)...)
				require.Error(t, err, "helm template %s", strings.Join(tc.args, " "))
				assert.Contains(t, out, tc.want)
			})
		}
	})
}
