# Mandate — every target a newcomer needs. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
GO ?= go
BIN := bin
MANDATE := $(BIN)/mandate
FUZZTIME ?= 10s
BENCHTIME ?= 2s
# Per test binary; go test's own default (10m) is too short for the
# real-API-server packages on a busy 2-core machine. Harness deadlines
# scale with MANDATE_TEST_TIMEOUT_SCALE (see README, Tests).
TEST_TIMEOUT ?= 40m

.PHONY: help
help: ## List the targets.
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-15s %s\n", $$1, $$2}'

# What `mandate version` reports, set by -ldflags in build and image.
# SOURCE_DATE_EPOCH (the commit's time by default) dates the build and
# every file of the image, so two builds of one commit are identical.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
BUILD_DATE ?= $(shell date -u -d @$(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -r $(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS = -X github.com/mandate-dev/mandate/buildinfo.version=$(VERSION) -X github.com/mandate-dev/mandate/buildinfo.commit=$(COMMIT) -X github.com/mandate-dev/mandate/buildinfo.date=$(BUILD_DATE)
ARCH ?= amd64

.PHONY: build
build: ## Build the mandate binary into bin/.
	@echo "go build -o $(MANDATE) ./cmd/mandate  (version $(VERSION))"
	@$(GO) build -ldflags '$(LDFLAGS)' -o $(MANDATE) ./cmd/mandate

# The release's semantic version (krew requires one): the tag when the
# commit has one, else v0.0.0-<git describe>.
RELEASE_VERSION ?= $(shell v=$$(git describe --tags --exact-match --match 'v*' 2>/dev/null) && echo $$v || echo v0.0.0-$(subst .,-,$(VERSION)))
RELEASE_PLATFORMS ?= linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64

.PHONY: release
release: ## Build the kubectl plugin (kubectl-mandate) for RELEASE_PLATFORMS into bin/release: a tar.gz per platform, SHA256SUMS and the krew manifest mandate.yaml with their checksums (not published from here).
	$(GO) run ./hack/release --version '$(RELEASE_VERSION)' --commit '$(COMMIT)' --source-date-epoch '$(SOURCE_DATE_EPOCH)' \
		--platforms '$(RELEASE_PLATFORMS)' --out $(BIN)/release

.PHONY: image
image: ## Build the container image (static, non-root, no shell; ARCH=arm64 for another) without a container engine: OCI layout bin/mandate-image, tarball bin/mandate-image.tar, digest bin/mandate-image.digest.
	$(GO) run ./hack/image --arch $(ARCH) --version '$(VERSION)' --commit '$(COMMIT)' --source-date-epoch '$(SOURCE_DATE_EPOCH)' \
		--layout $(BIN)/mandate-image --tarball $(BIN)/mandate-image.tar

.PHONY: envtest-assets
envtest-assets: ## Build the pinned kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kubectl, helm, promtool, krew and Kueue's controller, and copy the CRDs of cert-manager, Kueue, the Prometheus Operator, OpenReports and the governed workload kinds into bin/k8s from the Go module proxy (minutes the first time, then cached).
	hack/envtest-assets.sh

.PHONY: test
test: build envtest-assets chromium slurm ## Run every test: Go unit, property, fuzz-seed and real-API-server tests, the Rego suites, and a short fuzz run.
	$(GO) test -timeout $(TEST_TIMEOUT) ./...
	$(GO) test -timeout $(TEST_TIMEOUT) -tags load -count=1 -v -run 'TestBurst|TestRestartDuringBurst|TestBundleHotSwapUnderLoad|TestFailure|TestRotationUnderLoad|TestSelfSignedServe|TestLargeObjectsBoundedMemory|TestNoCredentialAnywhere|TestReplicasSpendTheGuaranteeOnce|TestTwoAPIServersSpendTheGuaranteeOnce|TestAPIServerRestartDuringSharedBurst|TestSustainedCreatesKeepTheLedgerFlat' ./test/load/ 2>&1 | grep -E '^(burst|webhook|client|restart|hotswap|failure|rotation|selfSigned|memory|secrets|replicas|sustained|--- |ok|FAIL|PASS|    [a-z_]+_test.go:[0-9]+:)'
	$(MANDATE) opa test policies/ -v --explain=fails | tail -n 3
	$(MAKE) --no-print-directory fuzz FUZZTIME=5s

.PHONY: chromium
chromium: ## Install Debian's chromium when missing (the HTML report's headless-browser test needs it).
	hack/chromium.sh

.PHONY: slurm
slurm: ## Install Debian's Slurm 22.05, munge and MariaDB when missing (the real-Slurm test, test/slurm, needs them).
	hack/slurm.sh

.PHONY: demo
demo: ## Run mandate serve as the webhook of a local kube-apiserver, load the example cluster, create the example workloads and print what was admitted, mutated or denied, and why.
	@[ -x $(BIN)/k8s/kube-apiserver ] && [ -x $(BIN)/k8s/etcd ] || \
		echo "make demo: the first run builds mandate, kube-apiserver and etcd from the Go module proxy into bin/: about 4-6 minutes on 2 cores, once (then cached)."
	$(MAKE) --no-print-directory build
	hack/envtest-assets.sh kube-apiserver etcd
	$(GO) run ./hack/demo --mandate $(MANDATE) --examples examples

.PHONY: chart-rules
chart-rules: ## Regenerate the chart's webhook rules from the kind registry and the scheduler RBAC and schema enum from the scheduler registry (after registering a kind or a scheduler).
	$(GO) run ./webhook/internal/chartrules
	$(GO) run ./internal/schedgen/cmd/schedgen

.PHONY: lint
lint: build ## gofmt, go vet, helm lint --strict, opa fmt and opa check --strict through mandate opa, mandate model check.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change: $$out"; exit 1; fi
	$(GO) vet ./...
	$(MANDATE) opa fmt --list --fail policies/
	$(MANDATE) opa check --strict policies/
	$(MANDATE) model check policies/
	hack/envtest-assets.sh helm
	$(BIN)/k8s/helm lint --strict charts/mandate --set policies.source=embedded-demo # the chart has no default model

.PHONY: fuzz
fuzz: ## Fuzz the workload normaliser, the admission handler, the model checker and the sbatch parser (FUZZTIME=10m for a long run).
	$(GO) test ./workload/ -run '^$$' -fuzz '^FuzzNormalize$$' -fuzztime $(FUZZTIME)
	$(GO) test ./webhook/ -run '^$$' -fuzz '^FuzzMutate$$' -fuzztime $(FUZZTIME)
	$(GO) test ./modelcheck/ -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime $(FUZZTIME)
	$(GO) test ./workload/sbatch/ -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)

.PHONY: bench
bench: ## Benchmarks on the 100k-GPU reference topology, with ratios against pure Rego; and the same nodes with their GPUs published by DRA ResourceSlices beside allocatable ones.
	$(GO) test ./evaluator/ -run '^$$' -bench '^BenchmarkReference$$' -benchtime 1x -timeout 30m
	$(GO) test ./topology/ -run '^$$' -bench '^BenchmarkDRAPublished$$' -benchtime 1x -timeout 30m

.PHONY: bench-simulate
bench-simulate: ## The simulator's speed, a benchmark: the FGD paper's protocol on the openb trace (1,213 nodes, about 10,800 placements a seed, seeds 42-51) per policy and pod list: seconds a seed, placements a wall second, and the allocation beside the paper's; the openb trace through the full decision path with tenants; a synthetic trace of MANDATE_SIMULATE_JOBS (100,000) workloads on the 12,500-node reference topology: wall seconds, simulated seconds a wall second, peak RSS.
	@uptime
	$(GO) test ./simulate/fgd/ -run '^$$' -bench '^BenchmarkFGDProtocol$$' -benchtime 1x -count 1 -timeout 30m
	$(GO) test ./simulate/replay/ -run '^$$' -bench '^(BenchmarkOpenbDecisionPath|BenchmarkSyntheticReference)$$' -benchtime 1x -count 1 -timeout 60m

.PHONY: bench-admission
bench-admission: envtest-assets ## The quota ledger's cost per decision: in memory vs shared (TenantLedger on a real API server), one replica vs three.
	$(GO) test ./test/e2e/ -run '^$$' -bench '^BenchmarkAdmissionLedger$$' -benchtime 1000x -timeout 30m

.PHONY: bench-webhook
bench-webhook: build ## Mandate's webhook (one replica in memory, the chart's two replicas with the shared ledger, three) beside a plain OPA server (pure Rego) and Gatekeeper (built from the module proxy), interleaved on this machine: reviews/s, p50/p99/max, CPU per review, ratios (BENCH_SECONDS, BENCH_ROUNDS, BENCH_CONCURRENCY).
	hack/envtest-assets.sh kube-apiserver etcd
	hack/gatekeeper.sh
	$(GO) run ./hack/benchwebhook --mandate $(MANDATE)

.PHONY: bench-sustain
bench-sustain: envtest-assets ## A sustained run through the chart's configuration (2 replicas, shared ledger, behind one address; 2 API servers on one etcd) on a real API server: BENCH_SUSTAIN_DURATION (5m) of GPU pod creates and deletes from BENCH_SUSTAIN_WORKERS (16) clients against tenants' guarantees; creates/s, admitted, denied, errors, over-admission, the TenantLedgers' size every BENCH_SUSTAIN_SAMPLE (10s); fails on an error, over-admission or a growing ledger.
	@uptime
	$(GO) test -tags benchsustain ./test/sustain/ -run '^TestBenchSustain$$' -v -count 1 -timeout 2h

.PHONY: bench-scale
bench-scale: envtest-assets ## serve as the chart runs it (BENCH_SCALE_REPLICAS=2 replicas, shared ledger, behind one address) at the reference scale on a real API server: 12,500 nodes × 8 GPUs and BENCH_SCALE_PODS pods (default 10k…150k); ready time, RSS, decision latency, a 1,000-pod gang from the Job create to the last pod admitted beside the same pods created with no webhook.
	$(GO) test -tags benchscale ./test/benchscale/ -run '^TestBenchScale$$' -v -count 1 -timeout 6h

.PHONY: clean
clean: ## Remove the mandate binary (bin/k8s, the API server build, stays cached).
	rm -rf $(MANDATE) $(BIN)/mandate-image $(BIN)/mandate-image.tar $(BIN)/mandate-image.digest $(BIN)/release
