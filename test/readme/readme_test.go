// Package readme runs the README's shell examples verbatim, so the commands
// a newcomer copies work as written: the `sh` blocks of a README section
// are split into commands and each is run by sh in a working directory
// holding bin/mandate (and what the section needs: a signing key pair, a
// Git work tree, the examples, the chart), with mandate, helm and kubectl
// on PATH, against a real API server. Every sh line of the README is run,
// or is a synopsis, or is listed as not run with the reason.
package readme

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/cert"

	"github.com/mandate-dev/mandate/test/envtest"
)

// sectionCommands returns the commands of the ```sh blocks of the README
// section under heading (up to the next "## " heading), continuation
// lines joined.
func sectionCommands(t *testing.T, readme, heading string) []string {
	t.Helper()
	data, err := os.ReadFile(readme)
	require.NoError(t, err)
	var cmds []string
	in, block := false, false
	pending := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == heading:
			in = true
			continue
		case in && strings.HasPrefix(line, "## "):
			in = false
		}
		if !in {
			continue
		}
		switch {
		case !block && line == "```sh":
			block = true
		case block && line == "```":
			block = false
			require.Empty(t, pending, "a block ends in a continuation line")
		case block:
			if cont, ok := strings.CutSuffix(line, "\\"); ok {
				pending += cont
				continue
			}
			cmds = append(cmds, strings.TrimSpace(pending+line))
			pending = ""
		}
	}
	require.NoError(t, sc.Err())
	return cmds
}

// TestPolicyBundlesSection runs the "Policy bundles" section of the README
// verbatim: build (with the Rego tests), sign with key id prod and scope
// mandate, verify, inspect, then serve the signed bundle with its key id
// and scope and ask it for its bundle status: the Git commit the bundle
// was built from is the active revision. Then audit it.
func TestPolicyBundlesSection(t *testing.T) {
	env := envtest.Start(t)
	root := env.RepoRoot
	cmds := runnable(sectionCommands(t, filepath.Join(root, "README.md"), "## Policy bundles"))
	require.NotEmpty(t, cmds)

	// The working directory a reader has: the repository (a Git work tree
	// with policies/), bin/mandate built, a key pair, a cluster snapshot
	// and a kubeconfig in ~/.kube.
	dir := t.TempDir()
	copyTree(t, filepath.Join(root, "policies"), filepath.Join(dir, "policies"))
	git(t, dir, "init", "-q")
	git(t, dir, "add", "policies")
	git(t, dir, "-c", "user.name=Mandate", "-c", "user.email=mandate@example.com", "commit", "-q", "-m", "policies")
	head := strings.TrimSpace(git(t, dir, "rev-parse", "HEAD"))
	linkMandate(t, root, dir)
	writeKeyPair(t, dir)
	snapshot, err := os.ReadFile(filepath.Join(root, "audit", "testdata", "admitted.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cluster.yaml"), snapshot, 0o644))
	home := filepath.Join(dir, "home")
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".kube"), 0o755))
	kubeconfig, err := os.ReadFile(env.WriteKubeconfig(t, "readme"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(home, ".kube", "config"), kubeconfig, 0o600))

	// serve's ports other than the README's metrics address, and its
	// serving certificate, come from the environment (as in a Deployment);
	// the commands stay as written.
	health, webhookPort := freePort(t), freePort(t)
	certDir := t.TempDir()
	crt, key, err := cert.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(certDir, "tls.crt"), crt, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(certDir, "tls.key"), key, 0o600))
	environ := append(os.Environ(),
		"HOME="+home,
		"KUBECONFIG="+filepath.Join(home, ".kube", "config"),
		"MANDATE_HEALTH_ADDR=127.0.0.1:"+health,
		"MANDATE_WEBHOOK_PORT="+webhookPort,
		"MANDATE_WEBHOOK_CERT_DIR="+certDir,
		"MANDATE_NAMESPACE=mandate-system",
	)
	// The README asks serve's status on 127.0.0.1:8080, serve's default
	// metrics address.
	if l, err := net.Listen("tcp", "127.0.0.1:8080"); err != nil {
		t.Fatalf("port 8080, the README's metrics address, is taken by another process: %v", err)
	} else {
		l.Close()
	}

	ran := map[string]bool{}
	for _, c := range cmds {
		t.Logf("$ %s", c)
		if strings.HasPrefix(c, "bin/mandate serve ") {
			serve := startServe(t, dir, environ, c)
			waitReady(t, "http://127.0.0.1:"+health+"/readyz", serve)
			ran["serve"] = true
			continue
		}
		cmd := exec.Command("sh", "-c", c)
		cmd.Dir, cmd.Env = dir, environ
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		require.NoError(t, err, "%s\nstdout:\n%s\nstderr:\n%s", c, stdout.String(), stderr.String())
		t.Logf("%s", stdout.String())
		if strings.HasPrefix(c, "bin/mandate bundle status") {
			assert.Contains(t, stdout.String(), "Active revision:  "+head, "serve activated the signed bundle built from the Git commit")
			assert.Contains(t, stdout.String(), "bundle.signed.tar.gz")
			ran["status"] = true
		}
		if strings.HasPrefix(c, "bin/mandate bundle sign") {
			ran["sign"] = true
		}
	}
	assert.Equal(t, map[string]bool{"sign": true, "serve": true, "status": true}, ran,
		"the section signs a bundle, serves it and asks for its status")
}

// serveProcess is a `mandate serve` started by sh, with its output.
type serveProcess struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
}

func (p *serveProcess) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *serveProcess) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// startServe runs the serve command line by sh until the test ends.
func startServe(t *testing.T, dir string, environ []string, line string) *serveProcess {
	t.Helper()
	p := &serveProcess{}
	p.cmd = exec.Command("sh", "-c", "exec "+line)
	p.cmd.Dir, p.cmd.Env = dir, environ
	p.cmd.Stdout, p.cmd.Stderr = io.Discard, p
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		_ = p.cmd.Wait()
		if t.Failed() {
			t.Logf("mandate serve's log:\n%s", p.String())
		}
	})
	return p
}

// waitReady polls readyz until it answers 200, failing when serve exits.
func waitReady(t *testing.T, readyz string, p *serveProcess) {
	t.Helper()
	exited := make(chan struct{})
	go func() {
		_, _ = p.cmd.Process.Wait()
		close(exited)
	}()
	deadline := time.Now().Add(envtest.Timeout(60 * time.Second))
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Fatalf("mandate serve exited before it was ready; its log:\n%s", p.String())
		default:
		}
		if resp, err := http.Get(readyz); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("mandate serve not ready; its log:\n%s", p.String())
}

// writeKeyPair writes key.pem (PKCS#8 ECDSA P-256) and key.pub (PKIX), the
// files the README's commands sign and verify with.
func writeKeyPair(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "key.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644))
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return string(out)
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	}))
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}
