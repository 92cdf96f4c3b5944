package e2e

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
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mandate-dev/mandate/test/envtest"
)

// serveProcess is `mandate serve` run as its own process against a
// suite's API server, so that a test can SIGKILL it as a crash would.
type serveProcess struct {
	cmd *exec.Cmd
	// addr is its webhook address.
	addr string
	log  *lockedBuffer
}

// startServeProcess builds the binary and runs one more replica of the
// suite (its API server, serving certificate, client CA and namespace)
// with the policies in dir and configYAML as its --config, and waits
// until /readyz answers 200. It is killed at the end of the test.
func (s *suite) startServeProcess(t *testing.T, dir, configYAML string) *serveProcess {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mandate")
	build := exec.Command("go", "build", "-o", bin, "./cmd/mandate")
	build.Dir = s.env.RepoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/mandate: %v\n%s", err, out)
	}
	configFile := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(configFile, []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	hooks := s.env.Environment.WebhookInstallOptions
	port := freePort(t)
	health := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	args := []string{"serve", "--config", configFile,
		"--kubeconfig", s.env.WriteKubeconfig(t, "mandate-process"),
		"--cert-dir", hooks.LocalServingCertDir, "--host", hooks.LocalServingHost, "--port", strconv.Itoa(port),
		"--health-addr", health, "--metrics-addr", "0", "--namespace", mandateNamespace, "--policies", dir}
	if s.env.WebhookClientCA != nil {
		args = append(args, "--client-ca-file", writeClientCA(t, s.env), "--client-cn", envtest.WebhookClientCN)
	}
	p := &serveProcess{addr: net.JoinHostPort(hooks.LocalServingHost, strconv.Itoa(port)), log: &lockedBuffer{}}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	// Its own process group: the kill reaches nothing else.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("unable to start mandate serve: %v", err)
	}
	t.Cleanup(func() { p.kill(t) })
	deadline := time.Now().Add(envtest.Timeout(60 * time.Second))
	for probe(health, "/readyz") != 200 {
		if time.Now().After(deadline) {
			t.Fatalf("mandate serve as a process is not ready; its log:\n%s", p.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return p
}

// kill SIGKILLs the process (once) and reaps it.
func (p *serveProcess) kill(t *testing.T) {
	t.Helper()
	if p.cmd.ProcessState != nil {
		return
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Errorf("unable to kill mandate serve: %v", err)
	}
	_ = p.cmd.Wait()
}

// reviewer POSTs reviews to a serve process that no create follows
// (keepReviewing).
type reviewer struct {
	// admitted counts the reviews answered allowed.
	admitted atomic.Int32
	stop     chan struct{}
	done     chan error
}

// keepReviewing POSTs reviews of platform's one-GPU preemptible build
// pods straight to the process (through c), one after another a tenth of
// a second apart, until stopped.
func (p *serveProcess) keepReviewing(c *http.Client) *reviewer {
	r := &reviewer{stop: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		var first error
		for i := 0; ; i++ {
			select {
			case <-r.stop:
				r.done <- first
				return
			case <-time.After(100 * time.Millisecond):
			}
			pod := buildPod(fmt.Sprintf("kept-%d", i))
			pod.Spec.PriorityClassName = "build-preemptible"
			out, err := postReview(c, p.addr, pod)
			switch {
			case err == nil && out.Allowed:
				r.admitted.Add(1)
			case err == nil && first == nil:
				first = fmt.Errorf("review of %s denied: %+v", pod.Name, out.Result)
			case first == nil:
				first = err
			}
		}
	}()
	return r
}

// halt stops the reviews and returns how many were admitted and the first
// failure, if any.
func (r *reviewer) halt() (int, error) {
	close(r.stop)
	err := <-r.done
	return int(r.admitted.Load()), err
}

// logTail is the end of what the process wrote.
func (p *serveProcess) logTail() string {
	out := p.log.String()
	return out[max(0, len(out)-4000):]
}

// lockedBuffer is a bytes.Buffer a process writes while a test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// steadyAdmissions is what admitSteadily saw.
type steadyAdmissions struct {
	admitted   int
	failed     []string
	longestGap time.Duration
}

// admitSteadily creates one-GPU build pods in namespace ns one after
// another, a tenth of a second apart, until the returned function is
// called; that returns how many were admitted, the failures and the
// longest time between two admissions.
func (s *suite) admitSteadily(t *testing.T, ns string) func() steadyAdmissions {
	t.Helper()
	stop := make(chan struct{})
	done := make(chan steadyAdmissions)
	go func() {
		var out steadyAdmissions
		last := time.Now()
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- out
				return
			case <-time.After(100 * time.Millisecond):
			}
			pod := buildPod(fmt.Sprintf("steady-%d", i))
			pod.Namespace = ns
			ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(60*time.Second))
			err := s.env.Client.Create(ctx, pod)
			cancel()
			if err != nil {
				out.failed = append(out.failed, fmt.Sprintf("%s: %v", pod.Name, err))
				continue
			}
			now := time.Now()
			out.admitted++
			out.longestGap = max(out.longestGap, now.Sub(last))
			last = now
		}
	}()
	return func() steadyAdmissions {
		close(stop)
		return <-done
	}
}
