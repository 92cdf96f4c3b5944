package envtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// RestartAPIServer kills kube-apiserver, as a crash or the loss of its
// node would, leaves it down for the given time and starts it again on the
// same address with the same etcd, certificates and users. etcd keeps
// running, so every object survives. (A graceful stop would wait for
// every open watch to drain, up to a minute.) The Env must have been
// started WithRestartableAPIServer.
func (e *Env) RestartAPIServer(down time.Duration) error {
	if e.apiServerDir == "" {
		return errors.New("the API server cannot be restarted: start the Env WithRestartableAPIServer")
	}
	pid, err := apiServerPID(e.apiServerDir)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("unable to kill kube-apiserver (pid %d): %w", pid, err)
	}
	apiServer := e.Environment.ControlPlane.GetAPIServer()
	// Stop now only reaps the killed process.
	if err := apiServer.Stop(); err != nil {
		return fmt.Errorf("unable to stop kube-apiserver: %w", err)
	}
	time.Sleep(down)
	if err := apiServer.Start(); err != nil {
		return fmt.Errorf("unable to start kube-apiserver again: %w", err)
	}
	return nil
}

// apiServerPID finds the kube-apiserver whose arguments name certDir, which
// is this Env's own.
func apiServerPID(certDir string) (int, error) {
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil || len(procs) == 0 {
		return 0, fmt.Errorf("unable to list processes in /proc (RestartAPIServer needs Linux): %v", err)
	}
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil {
			continue // exited meanwhile
		}
		args := bytes.Split(cmdline, []byte{0})
		if filepath.Base(string(args[0])) != "kube-apiserver" || !bytes.Contains(cmdline, []byte(certDir)) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil {
			return 0, fmt.Errorf("process path %s: %w", p, err)
		}
		return pid, nil
	}
	return 0, fmt.Errorf("no running kube-apiserver with certificates in %s", certDir)
}
