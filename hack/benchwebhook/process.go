package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is a server the bench started, in its own process group.
type process struct {
	name string
	cmd  *exec.Cmd
	// readyURL answers 200 once the server is ready; metricsURL serves
	// its Prometheus metrics ("" for a peer's).
	readyURL   string
	metricsURL string
	out        *tailBuffer
	exited     chan struct{}
	waitErr    error
}

// startProcess runs bin with args; its output is kept only as a tail (the
// decision log of a server under load is large and not what is measured).
func startProcess(name, bin string, args, env []string) (*process, error) {
	p := &process{name: name, out: &tailBuffer{max: 64 << 10}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if env != nil {
		p.cmd.Env = env
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("unable to start %s (%s): %w", name, bin, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM to the process group, then SIGKILL after 10s.
func (p *process) stop() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(10 * time.Second):
		// Not an error of the run: the measurements are done.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.exited
		logf("%s did not stop within 10s of SIGTERM; killed", p.name)
		return nil
	}
}

// alive fails when the process has exited.
func (p *process) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v)\n%s", p.name, p.waitErr, p.tail())
	default:
		return nil
	}
}

func (p *process) tail() string {
	return fmt.Sprintf("--- end of %s's output ---\n%s", p.name, p.out.lastLines(40))
}

// waitFor polls cond until it returns nil, the process exits, ctx ends or
// timeout passes; cond's last error explains a timeout.
func (p *process) waitFor(ctx context.Context, timeout time.Duration, what string, cond func() error) error {
	deadline := time.Now().Add(timeout)
	last := cond()
	for last != nil {
		if err := p.alive(); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not after %s (raise MANDATE_TEST_TIMEOUT_SCALE on a slow machine): %w\n%s", what, timeout, last, p.tail())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		last = cond()
	}
	return nil
}

// httpOK is nil when GET url answers 200.
func httpOK(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("unable to find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// tailBuffer keeps (at least) the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	// Compacted only past twice the limit: a copy per max bytes written,
	// not one per write.
	if len(b.buf) > 2*b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) lastLines(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(strings.TrimRight(string(b.buf), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 || (len(lines) == 1 && lines[0] == "") {
		return "(no output)"
	}
	return strings.Join(lines, "\n")
}
