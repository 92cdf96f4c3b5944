package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"
)

// publish sets the caBundle of every webhook of both configurations named
// WebhookConfigurationName, and says whether any had to change. The update
// carries the resourceVersion read, so a concurrent writer makes it fail
// with a conflict rather than be overwritten.
func (r *Rotator) publish(ctx context.Context, log logr.Logger, bundle []byte) (bool, error) {
	key := types.NamespacedName{Name: r.o.WebhookConfigurationName}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := r.o.Client.Get(ctx, key, mutating); err != nil {
		return false, fmt.Errorf("unable to read the MutatingWebhookConfiguration %s: %w", key.Name, err)
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := r.o.Client.Get(ctx, key, validating); err != nil {
		return false, fmt.Errorf("unable to read the ValidatingWebhookConfiguration %s: %w", key.Name, err)
	}
	changed := false
	var stale []string
	for i := range mutating.Webhooks {
		if cc := &mutating.Webhooks[i].ClientConfig; !bytes.Equal(cc.CABundle, bundle) {
			cc.CABundle, stale = bundle, append(stale, mutating.Webhooks[i].Name)
		}
	}
	if len(stale) > 0 {
		if err := r.o.Client.Update(ctx, mutating); err != nil {
			return false, fmt.Errorf("unable to set the caBundle of the MutatingWebhookConfiguration %s: %w", key.Name, err)
		}
		log.Info("caBundle set", "configuration", "MutatingWebhookConfiguration/"+key.Name, "webhooks", strings.Join(stale, ","), "cas", describeBundle(bundle))
		changed = true
	}
	stale = nil
	for i := range validating.Webhooks {
		if cc := &validating.Webhooks[i].ClientConfig; !bytes.Equal(cc.CABundle, bundle) {
			cc.CABundle, stale = bundle, append(stale, validating.Webhooks[i].Name)
		}
	}
	if len(stale) > 0 {
		if err := r.o.Client.Update(ctx, validating); err != nil {
			return false, fmt.Errorf("unable to set the caBundle of the ValidatingWebhookConfiguration %s: %w", key.Name, err)
		}
		log.Info("caBundle set", "configuration", "ValidatingWebhookConfiguration/"+key.Name, "webhooks", strings.Join(stale, ","), "cas", describeBundle(bundle))
		changed = true
	}
	return changed, nil
}

// describe names a certificate in logs: subject, serial and expiry.
func describe(c *x509.Certificate) string {
	if c == nil {
		return ""
	}
	serial := c.SerialNumber.Text(16)
	if len(serial) > 8 {
		serial = serial[:8]
	}
	return fmt.Sprintf("%s #%s until %s", c.Subject.CommonName, serial, c.NotAfter.UTC().Format("2006-01-02T15:04:05Z"))
}

func describeBundle(bundle []byte) []string {
	certs, _ := ParseBundle(bundle)
	out := make([]string, len(certs))
	for i, c := range certs {
		out[i] = describe(c)
	}
	return out
}
