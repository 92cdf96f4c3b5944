package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is a running `mandate serve` child process.
type server struct {
	cmd        *exec.Cmd
	healthAddr string
	log        *tailBuffer
	logPath    string
	exited     chan struct{}
	waitErr    error
}

// startServe runs `mandate serve` in its own process group, so a Ctrl-C in
// the terminal reaches only the demo, which then stops it in order.
func startServe(ctx context.Context, bin, kubeconfig string, hooks *webhooks, tmp string) (*server, error) {
	health, err := freeAddr()
	if err != nil {
		return nil, err
	}
	metrics, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(tmp, "mandate-serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	s := &server{healthAddr: health, log: &tailBuffer{max: 40}, logPath: logPath, exited: make(chan struct{})}
	s.cmd = exec.Command(bin, "serve",
		"--kubeconfig", kubeconfig,
		"--cert-dir", hooks.LocalServingCertDir,
		"--host", hooks.LocalServingHost,
		"--port", strconv.Itoa(hooks.LocalServingPort),
		"--health-addr", health,
		"--metrics-addr", metrics,
	)
	out := &teeWriter{a: s.log, b: logFile}
	s.cmd.Stdout, s.cmd.Stderr = out, out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("unable to start %s serve: %w", bin, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		logFile.Close()
		close(s.exited)
	}()
	return s, nil
}

// waitReady polls /readyz until it answers 200, the child exits, the
// timeout passes or ctx is done.
func (s *server) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	client := &http.Client{Timeout: time.Second}
	url := "http://" + s.healthAddr + "/readyz"
	last := "no answer yet"
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.exited:
			return fmt.Errorf("mandate serve exited before it was ready (%v)\n%s", s.waitErr, s.tail())
		case <-deadline.C:
			return fmt.Errorf("mandate serve not ready after %s (%s: %s)\n%s", timeout, url, last, s.tail())
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM to the child's process group, then SIGKILL after 5s.
func (s *server) stop() error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	pgid := s.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-s.exited:
		return nil
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-s.exited
		return fmt.Errorf("mandate serve did not stop within 5s of SIGTERM; killed")
	}
}

// tail is the end of the child's output, for error messages.
func (s *server) tail() string {
	return fmt.Sprintf("--- last lines of mandate serve's output (%s) ---\n%s", s.logPath, s.log.String())
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("unable to find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// tailBuffer keeps the last max lines written to it.
type tailBuffer struct {
	mu      sync.Mutex
	max     int
	lines   []string
	partial string
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	parts := strings.Split(b.partial+string(p), "\n")
	b.partial = parts[len(parts)-1]
	b.lines = append(b.lines, parts[:len(parts)-1]...)
	if over := len(b.lines) - b.max; over > 0 {
		b.lines = b.lines[over:]
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := b.lines
	if b.partial != "" {
		lines = append(lines[:len(lines):len(lines)], b.partial)
	}
	if over := len(lines) - b.max; over > 0 {
		lines = lines[over:]
	}
	if len(lines) == 0 {
		return "(no output)"
	}
	return strings.Join(lines, "\n")
}

type teeWriter struct {
	a, b interface{ Write([]byte) (int, error) }
}

func (t *teeWriter) Write(p []byte) (int, error) {
	_, errA := t.a.Write(p)
	_, errB := t.b.Write(p)
	return len(p), errors.Join(errA, errB)
}
