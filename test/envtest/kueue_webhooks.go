package envtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// kueueConversionCRDs are the Kueue CRDs with more than one version whose
// conversion webhook Kueue's install enables (config/components/crd's
// kustomization) and whose CA bundle Kueue's rotator injects: it does not
// report its certificates ready until it has injected every one of them.
var kueueConversionCRDs = []string{
	"localqueues.kueue.x-k8s.io",
	"clusterqueues.kueue.x-k8s.io",
	"cohorts.kueue.x-k8s.io",
	"workloads.kueue.x-k8s.io",
	"multikueueclusters.kueue.x-k8s.io",
}

// readKueueWebhooks reads the Mutating- and ValidatingWebhookConfiguration
// of Kueue's webhook manifests.
func readKueueWebhooks(path string) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("unable to read Kueue's webhook manifests: %w", err)
	}
	var (
		mutating   *admissionregistrationv1.MutatingWebhookConfiguration
		validating *admissionregistrationv1.ValidatingWebhookConfiguration
	)
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var doc map[string]any
		if err := decoder.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, nil, fmt.Errorf("unable to parse %s: %w", path, err)
		}
		raw, err := yaml.Marshal(doc)
		if err != nil {
			return nil, nil, fmt.Errorf("unable to parse %s: %w", path, err)
		}
		switch doc["kind"] {
		case "MutatingWebhookConfiguration":
			mutating = &admissionregistrationv1.MutatingWebhookConfiguration{}
			err = yaml.UnmarshalStrict(raw, mutating)
		case "ValidatingWebhookConfiguration":
			validating = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			err = yaml.UnmarshalStrict(raw, validating)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("unable to parse a %s of %s: %w", doc["kind"], path, err)
		}
	}
	if mutating == nil || validating == nil || len(mutating.Webhooks) == 0 || len(validating.Webhooks) == 0 {
		return nil, nil, fmt.Errorf("%s lacks Kueue's mutating or validating webhooks", path)
	}
	return mutating, validating, nil
}

// kueueClientConfig turns a webhook's reference to Kueue's Service into its
// URL on the local port (there is no kube-proxy in envtest), keeping the path.
func kueueClientConfig(cc admissionregistrationv1.WebhookClientConfig, base string) admissionregistrationv1.WebhookClientConfig {
	path := ""
	if cc.Service != nil && cc.Service.Path != nil {
		path = *cc.Service.Path
	}
	url := base + path
	return admissionregistrationv1.WebhookClientConfig{URL: &url}
}

// kueueNamespaceSelector is the namespace selector Kueue's install
// (config/components/webhook's kustomization) gives the webhooks of the
// job kinds: never its own namespace or kube-system.
func kueueNamespaceSelector(rules []admissionregistrationv1.RuleWithOperations) *metav1.LabelSelector {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, "kueue.x-k8s.io") {
			return nil
		}
	}
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", KueueNamespace},
	}}}
}

// pointKueueMutating names the configuration as Kueue's install does
// (so its rotator finds it) and points it at base.
func pointKueueMutating(m *admissionregistrationv1.MutatingWebhookConfiguration, base string) *admissionregistrationv1.MutatingWebhookConfiguration {
	m = m.DeepCopy()
	m.Name = kueueWebhookBase + "-" + m.Name
	for i := range m.Webhooks {
		m.Webhooks[i].ClientConfig = kueueClientConfig(m.Webhooks[i].ClientConfig, base)
		if sel := kueueNamespaceSelector(m.Webhooks[i].Rules); sel != nil {
			m.Webhooks[i].NamespaceSelector = sel
		}
	}
	return m
}

// pointKueueValidating is pointKueueMutating for the validating webhooks.
func pointKueueValidating(v *admissionregistrationv1.ValidatingWebhookConfiguration, base string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	v = v.DeepCopy()
	v.Name = kueueWebhookBase + "-" + v.Name
	for i := range v.Webhooks {
		v.Webhooks[i].ClientConfig = kueueClientConfig(v.Webhooks[i].ClientConfig, base)
		if sel := kueueNamespaceSelector(v.Webhooks[i].Rules); sel != nil {
			v.Webhooks[i].NamespaceSelector = sel
		}
	}
	return v
}

// enableKueueConversion gives Kueue's multi-version CRDs the conversion
// webhook its install enables, at base/convert.
func enableKueueConversion(ctx context.Context, c client.Client, base string) error {
	url := base + "/convert"
	for _, name := range kueueConversionCRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return fmt.Errorf("unable to read CRD %s: %w", name, err)
		}
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url},
				ConversionReviewVersions: []string{"v1"},
			},
		}
		if err := c.Update(ctx, crd); err != nil {
			return fmt.Errorf("unable to enable the conversion webhook of CRD %s: %w", name, err)
		}
	}
	return nil
}

// checkKueueCABundles checks that Kueue's rotator injected its CA into
// every webhook of its configurations, as Kueue's readiness implies.
func checkKueueCABundles(ctx context.Context, c client.Client, ca []byte) error {
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: kueueWebhookBase + "-mutating-webhook-configuration"}, m); err != nil {
		return fmt.Errorf("unable to read its mutating webhooks: %w", err)
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: kueueWebhookBase + "-validating-webhook-configuration"}, v); err != nil {
		return fmt.Errorf("unable to read its validating webhooks: %w", err)
	}
	var bundles []admissionregistrationv1.WebhookClientConfig
	for _, w := range m.Webhooks {
		bundles = append(bundles, w.ClientConfig)
	}
	for _, w := range v.Webhooks {
		bundles = append(bundles, w.ClientConfig)
	}
	for _, cc := range bundles {
		if !bytes.Equal(cc.CABundle, ca) {
			return fmt.Errorf("its webhook at %s lacks its CA", *cc.URL)
		}
	}
	return nil
}
