package webhook

import (
	"context"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DeleteConfigurations deletes the mutating and validating webhook
// configurations called name, so that the API server stops calling a
// Mandate that is going away (a helm uninstall's pre-delete hook): left
// behind with failurePolicy Fail, they would refuse every governed create.
// Idempotent: one that does not exist is already gone. It returns the
// kinds it deleted.
func DeleteConfigurations(ctx context.Context, c client.Client, name string) ([]string, error) {
	log := ctrl.LoggerFrom(ctx)
	var deleted []string
	var errs []error
	for _, o := range []struct {
		kind string
		obj  client.Object
	}{
		{"MutatingWebhookConfiguration", &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}},
		{"ValidatingWebhookConfiguration", &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}},
	} {
		kind := o.kind
		err := c.Delete(ctx, o.obj)
		switch {
		case apierrors.IsNotFound(err):
			log.Info("webhook configuration already gone", "kind", kind, "name", name)
		case err != nil:
			errs = append(errs, fmt.Errorf("unable to delete %s %s: %w", kind, name, err))
		default:
			log.Info("webhook configuration deleted", "kind", kind, "name", name)
			deleted = append(deleted, kind)
		}
	}
	return deleted, errors.Join(errs...)
}
