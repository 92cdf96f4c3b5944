// Command demo runs Mandate as an admission webhook in front of a real
// kube-apiserver and etcd (test/envtest), loads the example cluster into it,
// creates the example workloads the way kubectl would, and prints what the
// API server admitted, mutated or denied, and why. `make demo` runs it.
//
// Everything it starts (kube-apiserver, etcd, `mandate serve`) and every
// temporary directory it makes is removed on exit and on Ctrl-C.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mandate-dev/mandate/hack/internal/examples"
	"github.com/mandate-dev/mandate/test/envtest"
)

type config struct {
	mandate  string // the mandate binary
	examples string // holds cluster.yaml and workloads/
	model    string // the authority model's data.json (for PriorityClasses)
	timeout  time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.mandate, "mandate", "bin/mandate", "the mandate binary to run as `mandate serve`")
	flag.StringVar(&c.examples, "examples", "examples", "directory holding cluster.yaml and workloads/")
	flag.StringVar(&c.model, "model", "policies/mandate/model/data.json", "the authority model's data, whose priorities become PriorityClasses")
	flag.DurationVar(&c.timeout, "ready-timeout", time.Minute, "how long `mandate serve` may take to become ready")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	// Without this, a write to a closed stdout (`make demo | head`) kills
	// the process before it can stop what it started; with it, the write
	// fails and the cleanup still runs.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	err := run(ctx, c)
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "demo: interrupted; everything it started has been stopped")
		os.Exit(130)
	case err != nil:
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

var errMismatch = errors.New("the run does not match the outcomes the examples expect")

// logf reports progress on stderr, keeping stdout for the table.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "demo: "+format+"\n", args...)
}

func run(ctx context.Context, c config) (err error) {
	var cleanups []func() error
	defer func() {
		// Undo in reverse order: the webhook server, then the control
		// plane, then the temporary directories.
		for i := len(cleanups) - 1; i >= 0; i-- {
			err = errors.Join(err, cleanups[i]())
		}
	}()
	started := time.Now()
	mandateBin, err := filepath.Abs(c.mandate)
	if err != nil {
		return err
	}
	if _, err := os.Stat(mandateBin); err != nil {
		return fmt.Errorf("the mandate binary: %w (run `make build`)", err)
	}
	workloads, err := loadWorkloads(filepath.Join(c.examples, "workloads"))
	if err != nil {
		return err
	}
	clusterObjs, err := examples.LoadManifests(filepath.Join(c.examples, "cluster.yaml"))
	if err != nil {
		return err
	}
	priorities, err := loadPriorities(c.model)
	if err != nil {
		return err
	}

	logf("starting kube-apiserver and etcd with the Volcano, KAI and PyTorchJob CRDs")
	env, stopEnv, err := envtest.Launch(envtest.WithPyTorchJobCRD())
	if err != nil {
		return err
	}
	cleanups = append(cleanups, stopEnv)
	logf("control plane up at %s (%s)", env.Config.Host, time.Since(started).Round(100*time.Millisecond))
	if ctx.Err() != nil {
		return ctx.Err()
	}

	tmp, err := os.MkdirTemp("", "mandate-demo-")
	if err != nil {
		return err
	}
	cleanups = append(cleanups, func() error { return os.RemoveAll(tmp) })
	kubeconfig, err := writeKubeconfig(env, tmp)
	if err != nil {
		return err
	}

	// The cluster exists before Mandate is installed, as in a real rollout:
	// its objects do not go through the webhook, and `mandate serve`'s
	// informers list them all before it reports ready.
	start := time.Now()
	counts, err := loadCluster(ctx, env.Client, clusterObjs, priorities)
	if err != nil {
		return err
	}
	logf("cluster loaded: %s (%s)", counts, time.Since(start).Round(100*time.Millisecond))

	hooks, err := newWebhooks()
	if err != nil {
		return err
	}
	cleanups = append(cleanups, hooks.Cleanup)

	start = time.Now()
	srv, err := startServe(ctx, mandateBin, kubeconfig, hooks, tmp)
	if err != nil {
		return err
	}
	cleanups = append(cleanups, srv.stop)
	if err := srv.waitReady(ctx, c.timeout); err != nil {
		return err
	}
	logf("mandate serve ready on https://%s:%d (%s)", hooks.LocalServingHost, hooks.LocalServingPort, time.Since(start).Round(100*time.Millisecond))

	if err := hooks.register(ctx, env, mandateBin, tmp); err != nil {
		return fmt.Errorf("%w\n%s", err, srv.tail())
	}
	logf("webhooks registered and answering")

	rows, err := createWorkloads(ctx, env, workloads)
	if err != nil {
		return fmt.Errorf("%w\n%s", err, srv.tail())
	}
	fmt.Println()
	printTable(os.Stdout, rows)
	fmt.Println()
	fmt.Println(summary(rows))
	logf("done in %s", time.Since(started).Round(100*time.Millisecond))
	if bad := mismatches(rows); len(bad) > 0 {
		for _, m := range bad {
			fmt.Fprintf(os.Stderr, "!!! MISMATCH: %s\n", m)
		}
		return errMismatch
	}
	return nil
}
