package chart

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/test/envtest"
)

// TestPrometheusRuleValidates: with prometheusRule.enabled the chart
// renders the four alerts, and the PrometheusRule is accepted by a real API
// server serving the Prometheus Operator's own CRD (its OpenAPI schema
// validates it); the same rule with a malformed field is refused, so the
// schema is really applied.
func TestPrometheusRuleValidates(t *testing.T) {
	objs := render(t, release, namespace, "--set", "prometheusRule.enabled=true", "--set", "prometheusRule.labels.release=kube-prometheus")
	rule := find(t, objs, "PrometheusRule", fullname)
	assert.Equal(t, "kube-prometheus", rule.GetLabels()["release"])
	groups, _, err := unstructured.NestedSlice(rule.Object, "spec", "groups")
	require.NoError(t, err)
	var alerts []string
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			alerts = append(alerts, r.(map[string]any)["alert"].(string))
		}
	}
	assert.ElementsMatch(t, []string{"MandateIdleGPUsWithBlockedWork", "MandateCertificateExpiringSoon", "MandateBundleRejected", "MandateDecisionErrors"}, alerts)

	env := envtest.Start(t, envtest.WithPrometheusRuleCRD())
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))
	require.NoError(t, env.Client.Create(ctx, rule.DeepCopy()), "the chart's PrometheusRule is valid")

	bad := rule.DeepCopy()
	bad.SetName(fullname + "-bad")
	require.NoError(t, unstructured.SetNestedField(bad.Object, int64(42), "spec", "groups"))
	assert.Error(t, env.Client.Create(ctx, bad), "the schema refuses a malformed rule")
}
