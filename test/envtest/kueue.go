package envtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

const (
	kueueBinary = "kueue"
	// kueueWebhooks is config/components/webhook/manifests.yaml of the same
	// Kueue module, which hack/envtest-assets.sh copies beside the binary.
	kueueWebhooks = "kueue-webhooks.yaml"

	// KueueNamespace is where Kueue runs, as its install has it.
	KueueNamespace = "kueue-system"
	// kueueWebhookService and kueueWebhookSecret are the names Kueue's
	// install gives its webhook Service and certificate Secret. Kueue's
	// certificate rotator derives the names of the webhook configurations
	// it injects its CA into from the service's
	// (kueue-{mutating,validating}-webhook-configuration), and the DNS name
	// its serving certificate must carry
	// (kueue-webhook-service.kueue-system.svc).
	kueueWebhookService = "kueue-webhook-service"
	kueueWebhookSecret  = "kueue-webhook-server-cert"
	kueueWebhookBase    = "kueue"

	defaultKueueStartTimeout = 2 * time.Minute
	// kueueLogTail bounds how much of Kueue's log a failed test prints.
	kueueLogTail = 256 << 10
)

// Kueue is Kueue's controller manager running against an Env.
type Kueue struct {
	// LogPath is the file Kueue logs to.
	LogPath string
	// WebhookURL is where Kueue serves its webhooks.
	WebhookURL string
}

// Log returns what Kueue has logged so far.
func (k *Kueue) Log() string {
	data, err := os.ReadFile(k.LogPath)
	if err != nil {
		return fmt.Sprintf("(unable to read Kueue's log: %v)", err)
	}
	return string(data)
}

// StartKueue runs Kueue's controller manager (the binary hack/envtest-assets.sh
// builds from sigs.k8s.io/kueue, pinned by hack/tools/kueue) against env, as
// its install would run it but with no Deployment: the batch/v1 Job
// integration, jobs without a queue-name label left alone, no leader
// election, and its webhooks (the module's own manifests) registered with
// the API server and served on a free local port. env must have Kueue's
// CRDs (WithKueueCRDs). It returns once Kueue is ready (its /readyz: the
// webhook server is serving, its CA is injected), and stops it in
// t.Cleanup; Kueue's log is printed when the test fails.
//
// Kueue v0.19 cannot start with its internal certificate management off
// without the metrics certificate it then reads from the fixed path
// /etc/kueue/metrics/certs, so it runs with it on, as installs do: the
// harness plays cert-manager's part up front and gives Kueue's rotator a
// valid Secret — a CA and a serving certificate for the Service's DNS name
// that also names 127.0.0.1, which the webhook configurations and the CRDs'
// conversion webhooks call by URL (there is no kube-proxy) — and writes it
// into the certificate directory as the kubelet would mount it. The
// rotator keeps a valid certificate and injects its CA into the webhook
// configurations and the CRDs, as it does in a cluster.
func StartKueue(t testing.TB, env *Env) *Kueue {
	t.Helper()
	binary := filepath.Join(env.Environment.BinaryAssetsDirectory, kueueBinary)
	if info, err := os.Stat(binary); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
		t.Fatalf("envtest: %s is not an executable file (%v); %s", binary, err, assetsInstruction)
	}
	webhooksFile := filepath.Join(env.Environment.BinaryAssetsDirectory, kueueWebhooks)
	mutating, validating, err := readKueueWebhooks(webhooksFile)
	if err != nil {
		t.Fatalf("envtest: %v; %s", err, assetsInstruction)
	}
	for _, name := range kueueConversionCRDs {
		if !slices.ContainsFunc(env.CRDs, func(crd *apiextensionsv1.CustomResourceDefinition) bool { return crd.Name == name }) {
			t.Fatalf("envtest: Kueue needs its CRDs, and %s is not installed: start the Env WithKueueCRDs()", name)
		}
	}

	ctx := context.Background()
	c, err := kueueClient(env)
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	dir := t.TempDir()
	certDir := filepath.Join(dir, "certs")
	webhookPort, healthPort := freeLocalPort(t), freeLocalPort(t)
	webhookURL := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(webhookPort))

	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KueueNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("envtest: unable to create namespace %s: %v", KueueNamespace, err)
	}
	secret, err := kueueCertificates(time.Now())
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatalf("envtest: unable to create Kueue's certificate Secret: %v", err)
	}
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		t.Fatalf("envtest: %v", err)
	}
	for _, name := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
		if err := os.WriteFile(filepath.Join(certDir, name), secret.Data[name], 0o600); err != nil {
			t.Fatalf("envtest: unable to write Kueue's certificate: %v", err)
		}
	}
	for _, wh := range []client.Object{pointKueueMutating(mutating, webhookURL), pointKueueValidating(validating, webhookURL)} {
		if err := c.Create(ctx, wh); err != nil {
			t.Fatalf("envtest: unable to register Kueue's webhooks %s: %v", wh.GetName(), err)
		}
	}
	if err := enableKueueConversion(ctx, c, webhookURL); err != nil {
		t.Fatalf("envtest: %v", err)
	}

	configPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configPath, kueueConfig(webhookPort, healthPort, certDir), 0o600); err != nil {
		t.Fatalf("envtest: unable to write Kueue's configuration: %v", err)
	}
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	user, err := env.Environment.AddUser(crenvtest.User{Name: "kueue", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatalf("envtest: unable to add a user for Kueue: %v", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatalf("envtest: unable to write a kubeconfig for Kueue: %v", err)
	}
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatalf("envtest: %v", err)
	}

	k := &Kueue{LogPath: filepath.Join(dir, "kueue.log"), WebhookURL: webhookURL}
	logFile, err := os.Create(k.LogPath)
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(runCtx, binary, "--config="+configPath, "--kubeconfig="+kubeconfigPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Stopped with an interrupt, which Kueue's signal handler takes as
	// the kubelet's SIGTERM: the manager shuts down in order.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		logFile.Close()
		t.Fatalf("envtest: unable to start %s: %v", binary, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-exited
		logFile.Close()
		if t.Failed() {
			t.Logf("envtest: Kueue's log (%s):\n%s", k.LogPath, tail(k.Log(), kueueLogTail))
		}
	})

	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort)
	deadline := time.Now().Add(Timeout(defaultKueueStartTimeout))
	for !ready(readyz) {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("envtest: Kueue exited before it was ready: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("envtest: Kueue was not ready within %s (raise %s on a slow machine)", Timeout(defaultKueueStartTimeout), TimeoutScaleEnv)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Ready means the rotator kept the harness's certificate (one it made
	// itself would not name 127.0.0.1) and injected its CA.
	kept := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(secret), kept); err != nil {
		t.Fatalf("envtest: unable to read Kueue's certificate Secret: %v", err)
	}
	if !bytes.Equal(kept.Data[corev1.TLSCertKey], secret.Data[corev1.TLSCertKey]) {
		t.Fatalf("envtest: Kueue's rotator replaced the harness's serving certificate, which the API server needs for 127.0.0.1")
	}
	if err := checkKueueCABundles(ctx, c, secret.Data["ca.crt"]); err != nil {
		t.Fatalf("envtest: Kueue is ready but %v", err)
	}
	return k
}

// kueueClient is a client for what StartKueue writes, whatever the Env's
// scheme.
func kueueClient(env *Env) (client.Client, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("unable to build a scheme: %w", err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("unable to build a scheme: %w", err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("unable to create a client: %w", err)
	}
	return c, nil
}

// kueueConfig is Kueue's Configuration (config.kueue.x-k8s.io/v1beta2, the
// version v0.19 reads and defaults).
func kueueConfig(webhookPort, healthPort int, certDir string) []byte {
	cfg := map[string]any{
		"apiVersion": "config.kueue.x-k8s.io/v1beta2",
		"kind":       "Configuration",
		"namespace":  KueueNamespace,
		"health":     map[string]any{"healthProbeBindAddress": fmt.Sprintf("127.0.0.1:%d", healthPort)},
		// No metrics server: one port less to pick.
		"metrics":        map[string]any{"bindAddress": "0"},
		"webhook":        map[string]any{"host": "127.0.0.1", "port": webhookPort, "certDir": certDir},
		"leaderElection": map[string]any{"leaderElect": false},
		"internalCertManagement": map[string]any{
			"enable":             true,
			"webhookServiceName": kueueWebhookService,
			"webhookSecretName":  kueueWebhookSecret,
		},
		"manageJobsWithoutQueueName": false,
		"integrations":               map[string]any{"frameworks": []string{"batch/job"}},
		// The visibility API server would listen on the fixed port 8082;
		// nothing here reads it.
		"featureGates": map[string]bool{"VisibilityOnDemand": false},
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		panic(fmt.Sprintf("kueueConfig: %v", err)) // a literal map always marshals
	}
	return data
}

func freeLocalPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("envtest: unable to pick a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func ready(url string) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// tail is the last n bytes of s, from a line start.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return "…\n" + s
}
