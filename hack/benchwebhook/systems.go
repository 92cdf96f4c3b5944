package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// serving is what every system serves with: envtest's generated serving
// certificate (for 127.0.0.1) and its CA.
type serving struct {
	host    string
	certDir string
	ca      []byte
}

// startMandate runs `mandate serve` as test/load does: against the API
// server with an admin kubeconfig, envtest's serving certificate, the
// policies of policiesDir ("" for the embedded example model) and the
// extra flags.
func startMandate(name, bin, kubeconfig, policiesDir string, s serving, extra ...string) (*process, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	health, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	metrics, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	args := []string{"serve",
		"--kubeconfig", kubeconfig,
		"--cert-dir", s.certDir,
		"--host", s.host,
		"--port", portOf(addr),
		"--health-addr", health,
		"--metrics-addr", metrics,
		"--namespace", "mandate-system",
	}
	if policiesDir != "" {
		args = append(args, "--policies", policiesDir)
	}
	args = append(args, extra...)
	if os.Getenv(pprofEnv) != "" {
		pprof, err := freeAddr()
		if err != nil {
			return nil, "", err
		}
		args = append(args, "--pprof-addr", pprof)
		logf("%s: profiles at http://%s/debug/pprof/, metrics at http://%s/metrics", name, pprof, metrics)
	}
	// As the chart runs it, with GOMEMLIMIT, under which serve's
	// gcPercent applies.
	env := append(os.Environ(), "GOMEMLIMIT="+strconv.Itoa(fixtures.ChartGoMemLimit))
	p, err := startProcess(name, bin, args, env)
	if err != nil {
		return nil, "", err
	}
	p.readyURL = "http://" + health + "/readyz"
	p.metricsURL = "http://" + metrics + "/metrics"
	return p, "https://" + addr + "/mutate", nil
}

// pprofEnv, set to anything, gives every mandate replica a profiling
// address of its own, logged at start (`curl …/debug/pprof/profile`).
const pprofEnv = "BENCH_PPROF"

// independentPolicies writes the default policies with the model's tenants
// made independent trees into dir, and checks the model as `mandate model
// check` would.
func independentPolicies(ctx context.Context, bin string, model map[string]any, dir string) error {
	if err := os.CopyFS(dir, policies.FS); err != nil {
		return fmt.Errorf("unable to copy the default policies: %w", err)
	}
	indep, err := independentTrees(model)
	if err != nil {
		return err
	}
	raw, err := json.MarshalIndent(indep, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "mandate", "model", "data.json")
	if err := os.Chmod(path, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return fmt.Errorf("unable to write the independent-trees model: %w", err)
	}
	out, err := exec.CommandContext(ctx, bin, "model", "check", dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("the independent-trees model does not check: %w\n%s", err, out)
	}
	return nil
}

// startOPA runs a plain OPA server (`mandate opa run --server`) over HTTPS
// with the pure-Rego peer as the classic admission controller's default
// decision, the reference best fit and the cluster facts.
func startOPA(bin, policy, reference string, data map[string]any, dir string, s serving) (*process, string, error) {
	dataDir := filepath.Join(dir, "opa")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, "", err
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, "", err
	}
	dataFile := filepath.Join(dataDir, "data.json")
	if err := os.WriteFile(dataFile, raw, 0o600); err != nil {
		return nil, "", fmt.Errorf("unable to write the OPA peer's data: %w", err)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	args := []string{"opa", "run", "--server",
		"--addr", "https://" + addr,
		"--tls-cert-file", filepath.Join(s.certDir, "tls.crt"),
		"--tls-private-key-file", filepath.Join(s.certDir, "tls.key"),
		"--set=default_decision=/system/main",
		policy, reference, dataFile,
	}
	p, err := startProcess("opa", bin, args, nil)
	if err != nil {
		return nil, "", err
	}
	p.readyURL = "https://" + addr + "/health"
	return p, "https://" + addr + "/", nil
}

// gatekeeperNamespace is where Gatekeeper runs (its POD_NAMESPACE).
const gatekeeperNamespace = "gatekeeper-system"

// startGatekeeper runs Gatekeeper (as the system name) against the API
// server of kubeconfig with envtest's serving certificate (no rotation) and
// the given --operation values: by default webhook (the admission endpoint)
// and generate (the constraint CRDs of templates, in a deployment the audit
// pod's job), no audit.
func startGatekeeper(name, bin, kubeconfig string, operations []string, s serving) (*process, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	health, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	prom, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	args := []string{
		"--disable-cert-rotation",
		"--cert-dir", s.certDir,
		"--host", s.host,
		"--port", portOf(addr),
		"--health-addr", health,
		"--prometheus-port", portOf(prom),
		"--kubeconfig", kubeconfig,
		"--debug-use-fake-pod",
	}
	for _, op := range operations {
		args = append(args, "--operation="+op)
	}
	env := append(os.Environ(), "POD_NAMESPACE="+gatekeeperNamespace, "POD_NAME="+name+"-bench")
	p, err := startProcess(name, bin, args, env)
	if err != nil {
		return nil, "", err
	}
	p.readyURL = "http://" + health + "/readyz"
	return p, "https://" + addr + "/v1/admit", nil
}

// installGatekeeperPolicy creates the policy's ConstraintTemplate, waits
// for the constraint kind it defines to be served, and creates the
// constraint.
func installGatekeeperPolicy(ctx context.Context, env *envtest.Env, p gatekeeperPolicy, timeout time.Duration) error {
	if err := env.Client.Create(ctx, p.template.DeepCopy()); err != nil {
		return fmt.Errorf("unable to create the ConstraintTemplate %s: %w", p.template.GetName(), err)
	}
	constraint := p.constraint()
	// The constraint's kind exists once Gatekeeper has compiled the
	// template and created its CRD.
	deadline := time.Now().Add(timeout)
	for {
		err := env.Client.Create(ctx, constraint.DeepCopy())
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("unable to create the Gatekeeper constraint %s %s within %s: %w", p.kind, p.name, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// gatekeeperParameters are the constraint's parameters from the model:
// each tenant's priority classes (its own or inherited), the class
// defaults, the GPU resources the tenants have quota for.
func gatekeeperParameters(model map[string]any) (map[string]any, error) {
	indep, err := independentTrees(model)
	if err != nil {
		return nil, err
	}
	allowed := map[string]any{}
	resources := map[string]bool{}
	for name, v := range indep["tenants"].(map[string]any) {
		t := v.(map[string]any)
		allowed[name] = t["priorityClasses"]
		q, _ := t["quota"].(map[string]any)
		for r := range q {
			resources[r] = true
		}
	}
	var gpuResources []any
	for r := range resources {
		gpuResources = append(gpuResources, r)
	}
	sort.Slice(gpuResources, func(i, j int) bool { return gpuResources[i].(string) < gpuResources[j].(string) })
	return map[string]any{
		"tenantLabel":    "mandate.dev/tenant",
		"gpuResources":   gpuResources,
		"classDefaults":  model["classDefaults"],
		"allowedClasses": allowed,
	}, nil
}
