package chart

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mandate-dev/mandate/test/envtest"
)

// serveProcess is mandate serve running as a child process.
type serveProcess struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	done   chan error
	health string
	// webhook is the webhook server's https://host:port; servingCA
	// verifies its certificate.
	webhook   string
	servingCA []byte
}

// startServe runs the binary with the Deployment's arguments and
// environment, as the chart's ServiceAccount; only what a pod gets from
// its volumes and network differs: the serving certificate (envtest's,
// for 127.0.0.1), the policy files (the chart's ConfigMap, read back from
// the API server and written as the volume lays it out), the listen
// addresses. Then it registers the rendered webhook configurations,
// pointed at it, and waits until the API server calls them.
func startServe(ctx context.Context, t *testing.T, env *envtest.Env, bin string, d *appsv1.Deployment,
	mutating *admissionregistrationv1.MutatingWebhookConfiguration, validating *admissionregistrationv1.ValidatingWebhookConfiguration) *serveProcess {
	t.Helper()
	spec := d.Spec.Template.Spec
	container := spec.Containers[0]
	wio := &crenvtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	require.NoError(t, wio.PrepWithoutInstalling())
	t.Cleanup(func() { _ = wio.Cleanup() })
	policies := mountConfigMap(ctx, t, env.Client, spec, "policies")

	health := freeAddr(t)
	// The chart requires the API server's client certificate
	// (webhook.clientAuth): serve reads the CA that signed the Env's.
	clientCA := ""
	if env.WebhookClientCA != nil {
		clientCA = filepath.Join(t.TempDir(), "client-ca.crt")
		require.NoError(t, os.WriteFile(clientCA, env.WebhookClientCA.CertPEM, 0o600))
	}
	replace := map[string]string{
		"--client-ca-file": clientCA,
		"--cert-dir":       wio.LocalServingCertDir,
		"--port":           strconv.Itoa(wio.LocalServingPort),
		"--health-addr":    health,
		"--metrics-addr":   "0",
		"--policies":       policies,
	}
	args := []string{container.Args[0], "--host=" + wio.LocalServingHost,
		"--kubeconfig=" + impersonatingKubeconfig(t, env, "system:serviceaccount:"+namespace+":"+spec.ServiceAccountName)}
	for _, a := range container.Args[1:] {
		flag, _, _ := strings.Cut(a, "=")
		if flag == "--client-ca-file" && clientCA == "" {
			t.Fatal("the Deployment requires the API server's client certificate (--client-ca-file): start the Env WithWebhookClientCert")
		}
		if v, ok := replace[flag]; ok {
			a = flag + "=" + v
		}
		args = append(args, a)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = os.Environ()
	for _, e := range container.Env {
		switch {
		case e.Name == "POD_NAMESPACE":
			cmd.Env = append(cmd.Env, "POD_NAMESPACE="+namespace)
		case e.ValueFrom == nil:
			cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
		}
	}
	s := &serveProcess{cmd: cmd, out: &syncBuffer{}, done: make(chan error, 1), health: health,
		webhook: fmt.Sprintf("https://%s:%d", wio.LocalServingHost, wio.LocalServingPort), servingCA: wio.LocalServingCAData}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	require.NoError(t, cmd.Start())
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		s.stop(t)
		if t.Failed() {
			t.Logf("mandate serve %s\n%s", strings.Join(args, " "), s.out.String())
		}
	})
	envtest.WaitFor(t, 60*time.Second, "mandate serve to be ready", func() bool {
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("mandate serve exited: %v\n%s", err, s.out.String())
		default:
		}
		resp, err := http.Get("http://" + health + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	url := func(cc *admissionregistrationv1.WebhookClientConfig) {
		require.NotNil(t, cc.Service, "the chart registers a Service")
		require.NotNil(t, cc.Service.Path)
		u := fmt.Sprintf("https://%s:%d%s", wio.LocalServingHost, wio.LocalServingPort, *cc.Service.Path)
		cc.Service, cc.URL, cc.CABundle = nil, &u, wio.LocalServingCAData
	}
	for i := range mutating.Webhooks {
		url(&mutating.Webhooks[i].ClientConfig)
	}
	for i := range validating.Webhooks {
		url(&validating.Webhooks[i].ClientConfig)
	}
	require.NoError(t, env.Client.Create(ctx, mutating))
	require.NoError(t, env.Client.Create(ctx, validating))
	// Stored is not yet in force: the API server reads configurations
	// through an informer. A dry run of a tenant's pod shows when it is.
	envtest.WaitFor(t, 30*time.Second, "the API server to call the webhooks", func() bool {
		p := podIn("platform", "probe", "")
		return env.Client.Create(ctx, p, client.DryRunAll) == nil && p.Annotations["mandate.dev/policy-revision"] != ""
	})
	return s
}

// logged says whether a line of serve's output satisfies match.
func (s *serveProcess) logged(match func(string) bool) bool {
	for _, line := range strings.Split(s.out.String(), "\n") {
		if match(line) {
			return true
		}
	}
	return false
}

// stop ends serve (SIGKILL: it is gone, as a deleted pod is) and waits.
func (s *serveProcess) stop(t *testing.T) {
	t.Helper()
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Kill()
	err := <-s.done
	s.done <- err
}

// mountConfigMap writes the ConfigMap of the pod's volume name as the
// kubelet would mount it (its items at their paths) and returns the
// directory.
func mountConfigMap(ctx context.Context, t *testing.T, c client.Client, spec corev1.PodSpec, name string) string {
	t.Helper()
	var vol *corev1.Volume
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			vol = &spec.Volumes[i]
		}
	}
	require.NotNil(t, vol, "volume %s", name)
	require.NotNil(t, vol.ConfigMap, "volume %s is a ConfigMap", name)
	var cm corev1.ConfigMap
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: vol.ConfigMap.Name}, &cm))
	dir := t.TempDir()
	items := vol.ConfigMap.Items
	if len(items) == 0 {
		for k := range cm.Data {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, it := range items {
		data, ok := cm.Data[it.Key]
		require.True(t, ok, "ConfigMap %s has no key %s", cm.Name, it.Key)
		path := filepath.Join(dir, filepath.FromSlash(it.Path))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
	}
	return dir
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// buildMandate builds the mandate binary (the image's entrypoint).
func buildMandate(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mandate")
	ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(5*time.Minute))
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/mandate")
	build.Dir = envtest.RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/mandate: %v\n%s", err, out)
	}
	return bin
}

// syncBuffer is a bytes.Buffer safe for a process's writes and the test's
// reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
