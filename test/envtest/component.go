package envtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
)

// componentLogTail bounds how much of a component's log a failed test
// prints.
const componentLogTail = 256 << 10

// component is a Kubernetes control-plane binary that startComponent runs
// against an Env.
type component struct {
	// binary is the file name in the assets directory.
	binary string
	// user is the identity it authenticates as (a client certificate
	// envtest issues).
	user crenvtest.User
	// args are its flags; startComponent adds --kubeconfig.
	args []string
	// readyLine, when set, is what it logs once it works; startComponent
	// waits for it up to Timeout(readyTimeout).
	readyLine    string
	readyTimeout time.Duration
	// what names it in failures.
	what string
}

// startComponent runs c against env with a kubeconfig for c.user, stops
// it in t.Cleanup and reports its log when the test fails. The binary is
// the pinned one built by hack/envtest-assets.sh next to kube-apiserver;
// the test fails when it is missing. It returns the process's output.
func startComponent(t testing.TB, env *Env, c component) *lockedBuffer {
	t.Helper()
	// Start set this to the directory holding kube-apiserver.
	binary := filepath.Join(env.Environment.BinaryAssetsDirectory, c.binary)
	if info, err := os.Stat(binary); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
		t.Fatalf("envtest: %s is not an executable file (%v); %s", binary, err, assetsInstruction)
	}

	user, err := env.Environment.AddUser(c.user, nil)
	if err != nil {
		t.Fatalf("envtest: unable to add user %s for %s: %v", c.user.Name, c.binary, err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatalf("envtest: unable to write a kubeconfig for %s: %v", c.binary, err)
	}
	tmp := t.TempDir()
	kubeconfigPath := filepath.Join(tmp, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatalf("envtest: unable to write %s's kubeconfig: %v", c.binary, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary, append([]string{"--kubeconfig=" + kubeconfigPath}, c.args...)...)
	out := &lockedBuffer{ready: make(chan struct{}), readyLine: c.readyLine}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("envtest: unable to start %s: %v", binary, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("envtest: %s log:\n%s", c.binary, tail(out.String(), componentLogTail))
		}
	})

	if c.readyLine == "" {
		return out
	}
	select {
	case <-out.ready:
	case err := <-exited:
		exited <- err // for the cleanup
		t.Fatalf("envtest: %s exited before %s started: %v\n%s", c.binary, c.what, err, out.String())
	case <-time.After(Timeout(c.readyTimeout)):
		t.Fatalf("envtest: %s did not start within %s (raise %s on a slow machine)", c.what, Timeout(c.readyTimeout), TimeoutScaleEnv)
	}
	return out
}

// lockedBuffer collects a process's output and closes ready when
// readyLine appears.
type lockedBuffer struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	ready     chan struct{}
	readyLine string
	seen      bool
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	if !b.seen && b.readyLine != "" && strings.Contains(b.buf.String(), b.readyLine) {
		b.seen = true
		close(b.ready)
	}
	return n, err
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
