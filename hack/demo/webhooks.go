package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/topology"
	kinds "github.com/mandate-dev/mandate/workload"
)

// probeNamespace has no tenant label: once the webhooks answer, a GPU pod
// there is denied. It is made with the cluster, before the webhooks exist.
const probeNamespace = "mandate-demo-probe"

// webhooks are envtest's install options: they pick a free port on
// 127.0.0.1, generate a CA and serving certificate into a temporary
// directory (tls.crt, tls.key) and, at register, create the configurations
// with that CA bundle and wait until the API server serves them.
type webhooks struct {
	crenvtest.WebhookInstallOptions
}

func newWebhooks() (*webhooks, error) {
	w := &webhooks{crenvtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}}
	if err := w.PrepWithoutInstalling(); err != nil {
		return nil, fmt.Errorf("unable to prepare the webhook certificates and port: %w", err)
	}
	return w, nil
}

// register installs the mutating and validating configurations pointing at
// the local server, as `mandate webhook-configurations` prints them, then
// waits until the API server actually calls them: the configurations are
// read through an informer, so being stored is not yet being in force.
func (w *webhooks) register(ctx context.Context, env *envtest.Env, bin, tmp string) error {
	ca := filepath.Join(tmp, "webhook-ca.crt")
	if err := os.WriteFile(ca, w.LocalServingCAData, 0o600); err != nil {
		return fmt.Errorf("unable to write the webhook CA: %w", err)
	}
	// Every namespace, not only the tenant-labelled ones (the default):
	// the demo shows a namespace without a tenant denied, and its probe
	// relies on it.
	cmd := exec.CommandContext(ctx, bin, "webhook-configurations",
		"--url", fmt.Sprintf("https://%s:%d", w.LocalServingHost, w.LocalServingPort), "--ca-bundle", ca,
		"--namespace-selector", "")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s webhook-configurations: %w: %s", bin, err, stderr.String())
	}
	docs := strings.Split(string(out), "\n---\n")
	if len(docs) != 2 {
		return fmt.Errorf("%s webhook-configurations printed %d documents, want 2", bin, len(docs))
	}
	mutating, validating := &admissionregistrationv1.MutatingWebhookConfiguration{}, &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := yaml.UnmarshalStrict([]byte(docs[0]), mutating); err != nil {
		return fmt.Errorf("the mutating webhook configuration: %w", err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), validating); err != nil {
		return fmt.Errorf("the validating webhook configuration: %w", err)
	}
	w.MutatingWebhooks = []*admissionregistrationv1.MutatingWebhookConfiguration{mutating}
	w.ValidatingWebhooks = []*admissionregistrationv1.ValidatingWebhookConfiguration{validating}
	if err := w.Install(env.Config); err != nil {
		return fmt.Errorf("unable to register the webhooks: %w", err)
	}
	return waitInForce(ctx, env.Client, 30*time.Second)
}

// waitInForce dry-runs a one-GPU pod in the untenanted probe namespace until
// a webhook answers it (denies it, or marks it as Mandate's).
func waitInForce(ctx context.Context, c client.Client, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pod := probePod()
		err := c.Create(ctx, pod, client.DryRunAll)
		switch {
		case err != nil && strings.Contains(err.Error(), "admission webhook"):
			if strings.Contains(err.Error(), "denied the request") {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the webhooks are registered but calling them fails: %w", err)
			}
		case err != nil:
			return fmt.Errorf("probing the webhooks: %w", err)
		case hasMandateMarks(pod.Labels) || hasMandateMarks(pod.Annotations):
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the webhooks are registered but the API server did not call them within " + timeout.String())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func probePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: probeNamespace},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "probe", Image: "registry.example/probe:1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				topology.DefaultGPUResource: resource.MustParse("1"),
			}},
		}}},
	}
}

func hasMandateMarks(m map[string]string) bool {
	for k := range m {
		if strings.HasPrefix(k, kinds.KeyPrefix) {
			return true
		}
	}
	return false
}
