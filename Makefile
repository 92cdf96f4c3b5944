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

.PHONY: build
build: ## Build the mandate binary into bin/.
	$(GO) build -o $(MANDATE) ./cmd/mandate

.PHONY: envtest-assets
envtest-assets: ## Build the pinned kube-apiserver, etcd, kube-controller-manager and helm, and copy the cert-manager and Kueue CRDs, into bin/k8s from the Go module proxy (minutes the first time, then cached).
	hack/envtest-assets.sh

.PHONY: test
test: build envtest-assets ## Run every test: Go unit, property, fuzz-seed and real-API-server tests, the Rego suites, and a short fuzz run.
	$(GO) test -timeout $(TEST_TIMEOUT) ./...
	$(GO) test -timeout $(TEST_TIMEOUT) -tags load -count=1 -v -run 'TestBurst|TestRestartDuringBurst|TestBundleHotSwapUnderLoad|TestFailure|TestRotationUnderLoad|TestSelfSignedServe|TestLargeObjectsBoundedMemory|TestNoCredentialAnywhere|TestReplicasSpendTheGuaranteeOnce|TestAPIServerRestartDuringSharedBurst' ./test/load/ 2>&1 | grep -E '^(burst|webhook|client|restart|hotswap|failure|rotation|selfSigned|memory|secrets|replicas|--- |ok|FAIL|PASS|    [a-z_]+_test.go:[0-9]+:)'
	$(MANDATE) opa test policies/ -v --explain=fails | tail -n 3
	$(MAKE) --no-print-directory fuzz FUZZTIME=5s

.PHONY: demo
demo: build envtest-assets ## Run mandate serve as the webhook of a local kube-apiserver, load the example cluster, create the example workloads and print what was admitted, mutated or denied, and why.
	$(GO) run ./hack/demo --mandate $(MANDATE) --examples examples

.PHONY: chart-rules
chart-rules: ## Regenerate the chart's webhook rules from the kind registry (after registering a kind).
	$(GO) run ./webhook/internal/chartrules

.PHONY: lint
lint: build ## gofmt, go vet, helm lint --strict, opa fmt and opa check --strict through mandate opa.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change: $$out"; exit 1; fi
	$(GO) vet ./...
	$(MANDATE) opa fmt --list --fail policies/
	$(MANDATE) opa check --strict policies/
	hack/envtest-assets.sh helm
	$(BIN)/k8s/helm lint --strict charts/mandate

.PHONY: fuzz
fuzz: ## Fuzz the workload normaliser and the admission handler (FUZZTIME=10m for a long run).
	$(GO) test ./workload/ -run '^$$' -fuzz '^FuzzNormalize$$' -fuzztime $(FUZZTIME)
	$(GO) test ./webhook/ -run '^$$' -fuzz '^FuzzMutate$$' -fuzztime $(FUZZTIME)

.PHONY: bench
bench: ## Benchmarks on the 100k-GPU reference topology, with ratios against pure Rego.
	$(GO) test ./evaluator/ -run '^$$' -bench '^BenchmarkReference$$' -benchtime 1x -timeout 30m

.PHONY: bench-admission
bench-admission: envtest-assets ## The quota ledger's cost per decision: in memory vs shared (TenantLedger on a real API server), one replica vs three.
	$(GO) test ./test/e2e/ -run '^$$' -bench '^BenchmarkAdmissionLedger$$' -benchtime 1000x -timeout 30m

.PHONY: clean
clean: ## Remove the mandate binary (bin/k8s, the API server build, stays cached).
	rm -f $(MANDATE)
