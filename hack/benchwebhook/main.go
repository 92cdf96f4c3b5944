// Command benchwebhook measures Mandate's admission webhook beside its peers
// on this machine, in one interleaved run (`make bench-webhook`):
//
//   - mandate (one tree)      `mandate serve` with the example authority model,
//     every tenant under one root, as test/load starts it against an envtest
//     API server;
//   - mandate (chart)         two replicas as the chart runs them, sharing
//     the quota ledger (--shared-quota, TenantLedger objects), each load
//     connection to the next replica as a Service balances connections;
//     mandate (three) the same with three replicas;
//   - mandate (independent)   the same with every tenant its own root (the
//     model derived from policies/mandate/model/data.json without parents);
//   - opa                     a plain OPA server (`mandate opa run --server`)
//     with the equivalent pure-Rego policy (hack/benchwebhook/opa) and the
//     best fit of evaluator/testdata/reference.rego over the example
//     cluster's nodes, answering the classic admission controller's
//     data.system.main AdmissionReview;
//   - gatekeeper              Gatekeeper v3.23.1 built from the Go module proxy
//     (hack/gatekeeper.sh), webhook only, against the same API server, with
//     a ConstraintTemplate running the OPA peer's own Rego (its policy and
//     the reference best fit as the template's libraries) over the same
//     cluster facts, given as the constraint's parameters;
//   - gatekeeper-light        the same Gatekeeper with a ConstraintTemplate
//     of only the checks that need no cluster state (tenancy, priority
//     class), against an API server of its own holding the namespaces.
//
// A Go HTTPS load generator POSTs AdmissionReview bodies built from
// examples/workloads (admitted and denied mixed, a fresh uid each) straight
// to each system's endpoint, round-robin over systems and concurrencies for
// a few rounds, and prints reviews/s, p50/p99/max latency and CPU per review
// (the server process's utime+stime, and the load generator's own) per
// system and concurrency, with the ratios mandate/opa, mandate/gatekeeper,
// mandate/gatekeeper-light, chart/memory, three/memory and
// one-tree/independent. A busy machine makes
// the numbers slower, never fails the run; a system that answers an
// example wrongly fails it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is the run's settings: flags, defaulted from BENCH_* variables.
type config struct {
	seconds      time.Duration // per cell
	rounds       int
	concurrency  []int
	mandate      string   // the mandate binary
	assets       string   // bin/k8s: gatekeeper and its CRDs
	examples     string   // cluster.yaml and workloads/
	model        string   // the authority model's data.json
	reference    string   // the pure-Rego best fit
	opaPolicy    string   // the OPA peer's policy
	gkOps        []string // Gatekeeper's --operation values
	systems      []string
	readyTimeout time.Duration
	cpuProfile   string // the load generator's own CPU profile, "" for none
	// ledgerDrain, when > 0, is how long the shared ledger is read
	// (every 5 s) after the last cell, with no load: how fast the
	// reservations of never-stored reviews leave it.
	ledgerDrain time.Duration
}

// Systems, in the order the table lists them.
const (
	sysMandate = "mandate"
	// sysChart is the chart's configuration: two replicas sharing the
	// quota ledger, one connection per replica in turn as a Service
	// balances them; sysThree the same with three.
	sysChart       = "mandate-chart"
	sysThree       = "mandate-three"
	sysIndependent = "mandate-independent"
	sysOPA         = "opa"
	sysGatekeeper  = "gatekeeper"
	// sysGatekeeperLight is Gatekeeper with the light template (tenancy
	// and priority only), on an API server of its own: Gatekeeper enforces
	// every constraint it finds in its API server, so two templates in one
	// would make each Gatekeeper run both.
	sysGatekeeperLight = "gatekeeper-light"
)

var allSystems = []string{sysMandate, sysChart, sysThree, sysIndependent, sysOPA, sysGatekeeper, sysGatekeeperLight}

// replicaCount is how many replicas a system of several runs.
var replicaCount = map[string]int{sysChart: 2, sysThree: 3}

func main() {
	c, err := parseConfig(os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-webhook: %v\n", err)
		os.Exit(2)
	}
	// The load generator shares the cores with the servers it measures:
	// a higher collection target than Go's 100 leaves them more of them,
	// the same for every system.
	debug.SetGCPercent(400)
	stopProfile := func() {}
	if c.cpuProfile != "" {
		if stopProfile, err = startCPUProfile(c.cpuProfile); err != nil {
			fmt.Fprintf(os.Stderr, "bench-webhook: %v\n", err)
			os.Exit(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	err = run(ctx, c, os.Stdout)
	interrupted := ctx.Err() != nil
	stopProfile() // os.Exit runs no deferred call
	switch {
	case interrupted:
		fmt.Fprintln(os.Stderr, "bench-webhook: interrupted; everything it started has been stopped")
		os.Exit(130)
	case err != nil:
		fmt.Fprintf(os.Stderr, "bench-webhook: %v\n", err)
		os.Exit(1)
	}
}

// parseConfig reads the flags; BENCH_SECONDS, BENCH_ROUNDS,
// BENCH_CONCURRENCY and BENCH_SYSTEMS set their defaults.
func parseConfig(args []string, getenv func(string) string) (config, error) {
	fs := flag.NewFlagSet("benchwebhook", flag.ContinueOnError)
	c := config{}
	secs, err := envFloat(getenv, "BENCH_SECONDS", 20)
	if err != nil {
		return c, err
	}
	rounds, err := envFloat(getenv, "BENCH_ROUNDS", 3)
	if err != nil {
		return c, err
	}
	conc := envString(getenv, "BENCH_CONCURRENCY", "4,8,32,64")
	systems := envString(getenv, "BENCH_SYSTEMS", strings.Join(allSystems, ","))
	fs.Float64Var(&secs, "seconds", secs, "seconds measured per cell (system × concurrency × round) [$BENCH_SECONDS]")
	fs.Float64Var(&rounds, "rounds", rounds, "rounds over every cell, interleaved [$BENCH_ROUNDS]")
	fs.StringVar(&conc, "concurrency", conc, "comma-separated concurrencies [$BENCH_CONCURRENCY]")
	fs.StringVar(&systems, "systems", systems, "comma-separated systems: "+strings.Join(allSystems, ", ")+" [$BENCH_SYSTEMS]")
	fs.StringVar(&c.mandate, "mandate", "bin/mandate", "the mandate binary (serve, and opa run for the OPA peer)")
	fs.StringVar(&c.assets, "assets", "bin/k8s", "where hack/gatekeeper.sh put gatekeeper and crds/gatekeeper")
	fs.StringVar(&c.examples, "examples", "examples", "directory holding cluster.yaml and workloads/")
	fs.StringVar(&c.model, "model", "policies/mandate/model/data.json", "the authority model's data")
	fs.StringVar(&c.reference, "reference", "evaluator/testdata/reference.rego", "the pure-Rego best-fit placement the OPA peer loads")
	fs.StringVar(&c.opaPolicy, "opa-policy", "hack/benchwebhook/opa/admission.rego", "the OPA peer's admission policy")
	gkOps := "webhook,generate"
	fs.StringVar(&gkOps, "gatekeeper-operations", gkOps, "Gatekeeper's operations (webhook is required; generate makes the constraint CRDs)")
	fs.DurationVar(&c.readyTimeout, "ready-timeout", 2*time.Minute, "how long each system may take to be ready (scaled by $MANDATE_TEST_TIMEOUT_SCALE)")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write the load generator's own CPU profile to this file (a server's: `mandate serve --pprof-addr`)")
	drain := envString(getenv, "BENCH_LEDGER_DRAIN", "0s")
	fs.StringVar(&drain, "ledger-drain", drain, "after the last cell, read the shared ledger every 5s for this long with no load (0: not) [$BENCH_LEDGER_DRAIN]")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if secs <= 0 || rounds < 1 {
		return c, fmt.Errorf("seconds must be > 0 and rounds ≥ 1 (got %v, %v)", secs, rounds)
	}
	for _, op := range strings.Split(gkOps, ",") {
		c.gkOps = append(c.gkOps, strings.TrimSpace(op))
	}
	if !slices.Contains(c.gkOps, "webhook") {
		return c, fmt.Errorf("-gatekeeper-operations %q: webhook is required", gkOps)
	}
	c.seconds = time.Duration(secs * float64(time.Second))
	if c.ledgerDrain, err = time.ParseDuration(drain); err != nil || c.ledgerDrain < 0 {
		return c, fmt.Errorf("ledger drain %q: want a duration ≥ 0", drain)
	}
	c.rounds = int(rounds)
	for _, f := range strings.Split(conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return c, fmt.Errorf("concurrency %q: want positive integers", f)
		}
		c.concurrency = append(c.concurrency, n)
	}
	for _, s := range strings.Split(systems, ",") {
		s = strings.TrimSpace(s)
		if !contains(allSystems, s) {
			return c, fmt.Errorf("unknown system %q (want some of %s)", s, strings.Join(allSystems, ", "))
		}
		c.systems = append(c.systems, s)
	}
	return c, nil
}

func envFloat(getenv func(string) string, name string, def float64) (float64, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %w", name, v, err)
	}
	return f, nil
}

func envString(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

// startCPUProfile profiles this process into path until the returned
// function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("unable to create the CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("unable to start the CPU profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// errWrong is a system answering an example against its expected verdict.
var errWrong = errors.New("a system answered an example wrongly")

// logf reports progress on stderr; stdout carries the tables.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench-webhook: "+format+"\n", args...)
}
