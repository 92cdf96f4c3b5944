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
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	var mcc, vcc []clientConfig
	for i := range mutating.Webhooks {
		mcc = append(mcc, clientConfig{mutating.Webhooks[i].Name, &mutating.Webhooks[i].ClientConfig})
	}
	for i := range validating.Webhooks {
		vcc = append(vcc, clientConfig{validating.Webhooks[i].Name, &validating.Webhooks[i].ClientConfig})
	}
	changedM, err := r.setBundle(ctx, log, mutating, "MutatingWebhookConfiguration", mcc, bundle)
	if err != nil {
		return false, err
	}
	changedV, err := r.setBundle(ctx, log, validating, "ValidatingWebhookConfiguration", vcc, bundle)
	return changedM || changedV, err
}

// clientConfig is one webhook's name and client configuration.
type clientConfig struct {
	name string
	cc   *admissionregistrationv1.WebhookClientConfig
}

// setBundle sets bundle on every client configuration of obj and updates
// obj when one differed.
func (r *Rotator) setBundle(ctx context.Context, log logr.Logger, obj client.Object, kind string, ccs []clientConfig, bundle []byte) (bool, error) {
	var stale []string
	for _, c := range ccs {
		if !bytes.Equal(c.cc.CABundle, bundle) {
			c.cc.CABundle, stale = bundle, append(stale, c.name)
		}
	}
	if len(stale) == 0 {
		return false, nil
	}
	if err := r.o.Client.Update(ctx, obj); err != nil {
		return false, fmt.Errorf("unable to set the caBundle of the %s %s: %w", kind, obj.GetName(), err)
	}
	log.Info("caBundle set", "configuration", kind+"/"+obj.GetName(), "webhooks", strings.Join(stale, ","), "cas", describeBundle(bundle))
	return true, nil
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
