//go:build benchscale

package benchscale

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/mandate-dev/mandate/cmd/mandate/app"
	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/test/envtest"
)

// heapProfile runs serve in this process against the loaded API server
// for window, samples the live heap, and
// writes the heap profile taken at its largest into dir, printing the
// top of it: what holds serve's memory at this scale.
func heapProfile(t *testing.T, env *envtest.Env, policies, dir string, pods int, window time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := config.Default()
	c.Policies, c.Namespace = policies, mandateNamespace
	c.Webhook = config.Webhook{CertDir: env.Environment.WebhookInstallOptions.LocalServingCertDir, Host: "127.0.0.1", Port: freePort(t)}
	c.HealthAddr, c.MetricsAddr = freeAddr(t), "0"
	srv, err := app.New(ctx, env.Config, c, nil)
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("in-process serve: %v", err)
		}
	}()
	deadline := time.Now().Add(envtest.Timeout(10 * time.Minute))
	for {
		resp, err := http.Get("http://" + c.HealthAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("in-process serve never ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
	path := filepath.Join(dir, fmt.Sprintf("serve-heap-%dpods.pprof", pods))
	var peak, ready uint64
	write := func() {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	ready = ms.HeapAlloc
	write()
	// The authority metrics list and decide the whole cluster once a
	// minute: sample through one round.
	for end := time.Now().Add(window); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > peak+peak/10 {
			peak = ms.HeapAlloc
			write()
		}
	}
	out, err := exec.Command("go", "tool", "pprof", "-top", "-sample_index=inuse_space", path).CombinedOutput()
	if err != nil {
		t.Logf("go tool pprof: %v", err)
	}
	lines := strings.Split(string(out), "\n")
	t.Logf("in-process serve with %d pods: live heap %d MiB after ready (after a GC), peak %d MiB over %s; heap profile at the peak %s:\n%s",
		pods, ready>>20, peak>>20, window, path, strings.Join(lines[:min(len(lines), 30)], "\n"))
}

func freePort(t *testing.T) int {
	t.Helper()
	addr := freeAddr(t)
	var port int
	if _, err := fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &port); err != nil {
		t.Fatal(err)
	}
	return port
}
