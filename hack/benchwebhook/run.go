package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	examplefiles "github.com/mandate-dev/mandate/hack/internal/examples"
	"github.com/mandate-dev/mandate/test/envtest"
)

// system is a started system: its processes (one per replica) and its
// load target.
type system struct {
	procs  []*process
	target target
}

// alive fails when one of the system's processes has exited.
func (s *system) alive() error {
	for _, p := range s.procs {
		if err := p.alive(); err != nil {
			return err
		}
	}
	return nil
}

func run(ctx context.Context, c config, out io.Writer) (err error) {
	var cleanups []func() error
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			err = errors.Join(err, cleanups[i]())
		}
	}()
	started := time.Now()
	paths := map[string]*string{"mandate": &c.mandate, "assets": &c.assets, "examples": &c.examples, "model": &c.model, "reference": &c.reference, "opa-policy": &c.opaPolicy}
	for name, p := range paths {
		if *p, err = filepath.Abs(*p); err != nil {
			return fmt.Errorf("the %s path: %w", name, err)
		}
	}
	if _, err := os.Stat(c.mandate); err != nil {
		return fmt.Errorf("the mandate binary: %w (run `make build`)", err)
	}
	gatekeeperBin := filepath.Join(c.assets, "gatekeeper")
	gatekeeperCRDs := filepath.Join(c.assets, "crds", "gatekeeper")
	anyGatekeeper := slices.Contains(c.systems, sysGatekeeper) || slices.Contains(c.systems, sysGatekeeperLight)
	if anyGatekeeper {
		for _, p := range []string{gatekeeperBin, gatekeeperCRDs} {
			if _, err := os.Stat(p); err != nil {
				return fmt.Errorf("gatekeeper: %w (run hack/gatekeeper.sh)", err)
			}
		}
	}
	examples, err := loadExamples(filepath.Join(c.examples, "workloads"))
	if err != nil {
		return err
	}
	clusterObjs, err := examplefiles.LoadManifests(filepath.Join(c.examples, "cluster.yaml"))
	if err != nil {
		return err
	}
	model, err := readModel(c.model)
	if err != nil {
		return err
	}
	facts, err := opaData(model, clusterObjs)
	if err != nil {
		return err
	}
	// Both Gatekeeper policies are built (and the full one's Rego checked
	// against what Gatekeeper accepts) before anything starts.
	fullPolicy, err := fullGatekeeperPolicy(c.opaPolicy, c.reference, facts)
	if err != nil {
		return err
	}
	if _, err := fullPolicy.modules(); err != nil {
		return err
	}
	lightPolicy, err := lightGatekeeperPolicy(model)
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "bench-webhook: %d examples (%d denied), %s per cell, %d round(s), concurrency %v, %d CPUs\n",
		len(examples), countDenied(examples), c.seconds, c.rounds, c.concurrency, runtime.NumCPU())
	fmt.Fprintf(out, "uptime at start: %s\n", uptime())

	opts := []envtest.Option{envtest.WithPyTorchJobCRD()}
	if anyGatekeeper {
		opts = append(opts, envtest.WithCRDPaths(gatekeeperCRDs))
	}
	logf("starting kube-apiserver and etcd")
	env, stopEnv, err := envtest.Launch(opts...)
	if err != nil {
		return err
	}
	cleanups = append(cleanups, stopEnv)
	tmp, err := os.MkdirTemp("", "mandate-bench-webhook-")
	if err != nil {
		return err
	}
	cleanups = append(cleanups, func() error { return os.RemoveAll(tmp) })
	if err := loadCluster(ctx, env.Client, clusterObjs, model); err != nil {
		return err
	}
	for _, ns := range []string{"mandate-system", gatekeeperNamespace} {
		if err := ensureNamespace(ctx, env.Client, ns); err != nil {
			return err
		}
	}
	hooks := &crenvtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	if err := hooks.PrepWithoutInstalling(); err != nil {
		return fmt.Errorf("unable to generate the serving certificate: %w", err)
	}
	cleanups = append(cleanups, hooks.Cleanup)
	srv := serving{host: hooks.LocalServingHost, certDir: hooks.LocalServingCertDir, ca: hooks.LocalServingCAData}
	kubeconfig, err := adminKubeconfig(env, tmp, "bench-admin")
	if err != nil {
		return err
	}
	maxConc := slices.Max(c.concurrency)
	readyTimeout := envtest.Timeout(c.readyTimeout)

	var systems []*system
	for _, name := range c.systems {
		var (
			p    *process
			url  string
			dims []string
			// gk is the Gatekeeper system's policy and API server.
			gk    *gatekeeperPolicy
			gkEnv = env
			// procs and urls are the replicas of a system of several.
			procs []*process
			urls  []string
		)
		switch name {
		case sysMandate:
			p, url, err = startMandate(name, c.mandate, kubeconfig, "", srv)
		case sysChart, sysThree:
			// As the chart runs it: replicas sharing the quota ledger
			// (TenantLedger objects in the API server).
			for i := range replicaCount[name] {
				var rp *process
				var ru string
				if rp, ru, err = startMandate(fmt.Sprintf("%s-%d", name, i), c.mandate, kubeconfig, "", srv, "--shared-quota"); err != nil {
					break
				}
				cleanups = append(cleanups, rp.stop)
				procs, urls = append(procs, rp), append(urls, ru)
			}
		case sysIndependent:
			dir := filepath.Join(tmp, "independent-policies")
			if err = independentPolicies(ctx, c.mandate, model, dir); err == nil {
				p, url, err = startMandate(name, c.mandate, kubeconfig, dir, srv)
			}
		case sysOPA:
			p, url, err = startOPA(c.mandate, c.opaPolicy, c.reference, facts, tmp, srv)
		case sysGatekeeper:
			gk = &fullPolicy
			p, url, err = startGatekeeper(name, gatekeeperBin, kubeconfig, c.gkOps, srv)
		case sysGatekeeperLight:
			dims = []string{"tenancy", "priority"}
			gk = &lightPolicy
			var (
				lightKubeconfig string
				stop            func() error
			)
			gkEnv, lightKubeconfig, stop, err = launchNamespacesOnly(ctx, clusterObjs, gatekeeperCRDs, tmp)
			if err != nil {
				return err
			}
			cleanups = append(cleanups, stop)
			p, url, err = startGatekeeper(name, gatekeeperBin, lightKubeconfig, c.gkOps, srv)
		}
		if err != nil {
			return err
		}
		if p != nil {
			cleanups = append(cleanups, p.stop)
			procs, urls = []*process{p}, []string{url}
		}
		client, err := newClient(srv.ca, maxConc)
		if err != nil {
			return err
		}
		s := &system{procs: procs, target: target{name: name, urls: urls, deniedDims: dims, client: client, next: new(atomic.Uint32)}}
		for _, rp := range procs {
			s.target.pids = append(s.target.pids, rp.pid())
			if err := rp.waitFor(ctx, readyTimeout, rp.name+" ready", func() error { return httpOK(client, rp.readyURL) }); err != nil {
				return err
			}
		}
		if gk != nil {
			if err := installGatekeeperPolicy(ctx, gkEnv, *gk, readyTimeout); err != nil {
				return fmt.Errorf("%w\n%s", err, p.tail())
			}
		}
		// Every example answered as expected once by every replica before
		// measuring: the informers have synced, the constraint is enforced.
		for i, rp := range procs {
			if err := rp.waitFor(ctx, readyTimeout, rp.name+" answering every example as expected", func() error {
				return checkAll(ctx, s.target.replica(i), examples)
			}); err != nil {
				return err
			}
		}
		logf("%s ready and answering every example as expected (%s since start)", name, time.Since(started).Round(100*time.Millisecond))
		systems = append(systems, s)
	}

	// The shared ledger is read after each cell once a system sharing it
	// runs (they share one API server, so they share its TenantLedgers).
	shared := slices.Contains(c.systems, sysChart) || slices.Contains(c.systems, sysThree)
	var readings []ledgerReading
	var cells []*cell
	total := c.rounds * len(c.concurrency) * len(systems)
	for round := 1; round <= c.rounds; round++ {
		for ci, conc := range c.concurrency {
			// Round-robin: the order of the systems rotates from cell
			// to cell, so none is always measured first or last.
			for k := range systems {
				s := systems[(k+round+ci)%len(systems)]
				if err := s.alive(); err != nil {
					return err
				}
				sharedSystem := s.target.name == sysChart || s.target.name == sysThree
				var before ledgerCounts
				if sharedSystem {
					if before, err = scrapeLedger(ctx, http.DefaultClient, s.procs); err != nil {
						return err
					}
				}
				cl, err := measure(ctx, s.target, examples, conc, c.seconds)
				if err != nil {
					return fmt.Errorf("%s at c=%d: %w", s.target.name, conc, err)
				}
				if sharedSystem {
					after, err := scrapeLedger(ctx, http.DefaultClient, s.procs)
					if err != nil {
						return err
					}
					d := after.minus(before)
					cl.ledger = &d
				}
				cl.round = round
				cells = append(cells, cl)
				logf("[%d/%d] round %d c=%d %-20s %6.0f reviews/s p99 %s, %d errors, %d wrong",
					len(cells), total, round, conc, s.target.name, cl.rate(), ms(cl.percentile(0.99)), cl.errors, cl.wrong)
				if shared {
					size, err := envtest.ReadLedger(ctx, env.Client)
					if err != nil {
						return err
					}
					readings = append(readings, ledgerReading{after: cl, size: size})
				}
			}
		}
	}

	fmt.Fprintln(out)
	fmt.Fprintln(out, "Cells, in the order measured:")
	printCells(out, cells)
	fmt.Fprintln(out)
	fmt.Fprintf(out, "Per system and concurrency over %d round(s), as min–max (median):\n", c.rounds)
	sums := summarize(cells, c.systems, c.concurrency)
	printSummary(out, sums)
	fmt.Fprintln(out)
	for _, l := range ratios(sums, c.concurrency) {
		fmt.Fprintln(out, l)
	}
	printWrites(out, cells)
	if shared && c.ledgerDrain > 0 {
		logf("reading the shared ledger for %s with no load", c.ledgerDrain)
		from := time.Now()
		for {
			if err := sleepCtx(ctx, 5*time.Second); err != nil {
				return err
			}
			size, err := envtest.ReadLedger(ctx, env.Client)
			if err != nil {
				return err
			}
			readings = append(readings, ledgerReading{idle: time.Since(from).Round(time.Second), size: size})
			if time.Since(from) >= c.ledgerDrain {
				break
			}
		}
	}
	fmt.Fprintln(out)
	printLedger(out, readings)
	fmt.Fprintf(out, "uptime at end: %s\n", uptime())

	var bad []string
	for _, cl := range cells {
		if cl.wrong > 0 {
			bad = append(bad, fmt.Sprintf("%s c=%d round %d: %d wrong answers, first: %s", cl.system, cl.concurrency, cl.round, cl.wrong, cl.firstWrong))
		}
		if cl.errors > 0 {
			logf("%s c=%d round %d: %d errors (not successes), first: %s", cl.system, cl.concurrency, cl.round, cl.errors, cl.firstError)
		}
	}
	if len(bad) > 0 {
		for _, b := range bad {
			fmt.Fprintf(os.Stderr, "!!! %s\n", b)
		}
		return errWrong
	}
	return nil
}

// checkAll posts every example once and fails on the first answer that is
// not the expected one.
func checkAll(ctx context.Context, t target, examples []example) error {
	conn, err := newRawConn(t)
	if err != nil {
		return err
	}
	defer conn.close()
	for _, e := range examples {
		body, uid := e.next()
		v, err := post(ctx, conn, body, uid)
		if err != nil {
			return fmt.Errorf("%s: %w", e.file, err)
		}
		if v.allowed == e.expectedDenied(t.deniedDims) {
			return fmt.Errorf("%s: allowed=%v, expected %s (%s)", e.file, v.allowed, expectation(e, t.deniedDims), v.message)
		}
	}
	return nil
}

func countDenied(examples []example) int {
	n := 0
	for _, e := range examples {
		if e.denied {
			n++
		}
	}
	return n
}

// uptime is `uptime`'s line (with the load average), or /proc/loadavg.
func uptime() string {
	if out, err := exec.Command("uptime").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
		return "load average (/proc/loadavg): " + strings.TrimSpace(string(raw))
	}
	return "unknown"
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
