#!/usr/bin/env bash
# Builds the pinned binaries that tests run against a real API server:
#   kube-apiserver           from hack/tools/k8s   (k8s.io/kubernetes)
#   kube-controller-manager  from hack/tools/k8s   (the same module; tests run
#                            only its garbage collector, see test/envtest/gc.go)
#   kube-scheduler           from hack/tools/k8s   (the same module; the
#                            preemption tests run it, see
#                            test/envtest/scheduler.go)
#   kubectl                  from hack/tools/k8s   (the same module; the README's
#                            kubectl lines run in test/readme)
#   etcd                     from hack/tools/etcd  (go.etcd.io/etcd/server/v3)
#   helm                     from hack/tools/helm  (helm.sh/helm/v3)
#   kueue                    from hack/tools/kueue (sigs.k8s.io/kueue/cmd/kueue,
#                            Kueue's controller manager, with the webhook
#                            manifests of the same module beside it as
#                            kueue-webhooks.yaml; test/envtest/kueue.go runs it)
#   validate-krew-manifest   from hack/tools/krew (sigs.k8s.io/krew: krew's own
#   and kubectl-krew         manifest validator and krew itself; test/krew
#                            validates and installs the plugin manifest that
#                            `make release` writes)
#   promtool                 from hack/tools/prometheus
#                            (github.com/prometheus/prometheus/cmd/promtool;
#                            test/chart runs `promtool test rules` on the
#                            chart's PrometheusRule)
# and copies cert-manager's CRDs out of the github.com/cert-manager/cert-manager
# module into crds/cert-manager/, Kueue's out of sigs.k8s.io/kueue into
# crds/kueue/, and the governed workload kinds' (JobSet, LeaderWorkerSet,
# Kubeflow Trainer, MPI operator, KubeRay) out of their modules into
# crds/{jobset,lws,trainer,mpi-operator,kuberay}/ (workload-crds), and the
# Prometheus Operator's out of github.com/prometheus-operator/prometheus-operator
# into crds/prometheus-operator/, and OpenReports' (the Reports serve's
# background audit writes) out of github.com/openreports/reports-api, at the
# version the root go.mod requires, into crds/openreports/.
#
# Everything comes from the Go module proxy; the versions are pinned by the
# go.mod/go.sum of each tools module (and CERT_MANAGER_VERSION below). Output
# goes to bin/k8s/ (override with ENVTEST_ASSETS_DIR), which is what
# test/envtest uses as KUBEBUILDER_ASSETS.
#
# Idempotent: each asset has a stamp file recording what it was built from, and
# is rebuilt only when missing or when that changes. The first build of
# kube-apiserver takes minutes (kube-controller-manager and kube-scheduler
# share most of its dependencies, so they are quick after that); later runs
# are no-ops (and rebuilds after a version bump reuse Go's build cache).
#
# Usage: hack/envtest-assets.sh [--force]
#          [kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|etcd|helm|kueue|promtool|krew|cert-manager-crds|kueue-crds|workload-crds|prometheus-operator-crds|openreports-crds ...]
set -euo pipefail

# Not a Go module dependency anywhere, so pinned here. `go mod download`
# verifies the module against the checksum database.
CERT_MANAGER_VERSION=v1.21.2
# The Kueue whose CRDs `mandate sync` writes against (served at this exact
# version only); hack/tools/kueue must require the same version.
KUEUE_VERSION=v0.19.2
# The workload kinds Mandate governs beyond core and Volcano: their CRDs,
# served at these exact versions only.
JOBSET_VERSION=v0.10.1
LWS_VERSION=v0.7.0
TRAINER_VERSION=v2.0.0
MPI_OPERATOR_VERSION=v0.6.0
KUBERAY_VERSION=v1.4.2
# The Prometheus Operator whose PrometheusRule CRD the chart's rules are
# validated against.
PROMETHEUS_OPERATOR_VERSION=v0.85.0

# Bump to force every asset to rebuild after changing how they are built.
ASSETS_FORMAT=1

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools_dir="$repo_root/hack/tools"
out_dir=${ENVTEST_ASSETS_DIR:-$repo_root/bin/k8s}

force=false
assets=()
for arg in "$@"; do
	case "$arg" in
	--force) force=true ;;
	kube-apiserver | kube-controller-manager | kube-scheduler | kubectl | etcd | helm | kueue | promtool | krew | cert-manager-crds | kueue-crds | workload-crds | prometheus-operator-crds | openreports-crds) assets+=("$arg") ;;
	-h | --help)
		sed -n '2,47p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "envtest-assets: unknown argument: $arg" >&2
		exit 2
		;;
	esac
done
if [ "${#assets[@]}" -eq 0 ]; then
	assets=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd helm kueue promtool krew cert-manager-crds kueue-crds workload-crds prometheus-operator-crds openreports-crds)
fi

log() { echo "envtest-assets: $*" >&2; }
die() {
	log "ERROR: $*"
	exit 1
}
on_exit() {
	local rc=$?
	if [ "$rc" -ne 0 ]; then
		log "FAILED (exit status $rc)"
	fi
}
trap on_exit EXIT

command -v go >/dev/null 2>&1 || die "go is not on PATH"

sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		cat "$@" | sha256sum | cut -d' ' -f1
	else
		cat "$@" | shasum -a 256 | cut -d' ' -f1
	fi
}

# module_version <tools module dir> <module path>
module_version() {
	go -C "$1" list -m -f '{{.Version}}' "$2"
}

# up_to_date <name> <stamp content> <files...>: true when every file exists and
# the stamp matches.
up_to_date() {
	local name=$1 want=$2
	shift 2
	"$force" && return 1
	local f
	for f in "$@"; do
		[ -e "$f" ] || return 1
	done
	[ -f "$out_dir/.$name.stamp" ] && [ "$(cat "$out_dir/.$name.stamp")" = "$want" ]
}

write_stamp() {
	printf '%s\n' "$2" >"$out_dir/.$1.stamp"
}

# go_build <name> <tools module> <package> <ldflags>: builds into a temporary
# file and renames it, so an interrupted build never leaves a broken binary.
go_build() {
	local name=$1 mod=$2 pkg=$3 ldflags=$4
	local start=$SECONDS
	log "building $name ($pkg) in ${mod#"$repo_root"/} ..."
	CGO_ENABLED=0 go -C "$mod" build -trimpath -ldflags="-s -w $ldflags" \
		-o "$out_dir/.$name.tmp" "$pkg"
	mv -f "$out_dir/.$name.tmp" "$out_dir/$name"
	log "built $out_dir/$name in $((SECONDS - start))s"
}

# build_kubernetes <command>: builds k8s.io/kubernetes/cmd/<command> from
# hack/tools/k8s.
build_kubernetes() {
	local name=$1 mod="$tools_dir/k8s" version
	version=$(module_version "$mod" k8s.io/kubernetes)
	local stamp="$name $version format=$ASSETS_FORMAT $(sha256 "$mod/go.mod" "$mod/go.sum")"
	if up_to_date "$name" "$stamp" "$out_dir/$name"; then
		log "$name $version is up to date"
		return
	fi
	# The same version stamping as kubernetes' hack/lib/version.sh, so that
	# /version and the client-go user agent report the real release.
	local major minor ldflags="" pkg
	major=${version#v}
	major=${major%%.*}
	minor=${version#v*.}
	minor=${minor%%.*}
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
		ldflags+=" -X $pkg.gitTreeState=clean"
	done
	go_build "$name" "$mod" "k8s.io/kubernetes/cmd/$name" "$ldflags"
	write_stamp "$name" "$stamp"
}

build_etcd() {
	local mod="$tools_dir/etcd" version
	version=$(module_version "$mod" go.etcd.io/etcd/server/v3)
	local stamp="etcd $version format=$ASSETS_FORMAT $(sha256 "$mod/go.mod" "$mod/go.sum")"
	if up_to_date etcd "$stamp" "$out_dir/etcd"; then
		log "etcd $version is up to date"
		return
	fi
	# The etcd server's main package is the module root; its version is a
	# constant in go.etcd.io/etcd/api/v3/version.
	go_build etcd "$mod" go.etcd.io/etcd/server/v3 ""
	write_stamp etcd "$stamp"
}

build_helm() {
	local mod="$tools_dir/helm" version k8s
	version=$(module_version "$mod" helm.sh/helm/v3)
	local stamp="helm $version format=$ASSETS_FORMAT $(sha256 "$mod/go.mod" "$mod/go.sum")"
	if up_to_date helm "$stamp" "$out_dir/helm"; then
		log "helm $version is up to date"
		return
	fi
	# As helm's own Makefile does: the version, and the default Kubernetes
	# version (for `helm template`/`helm lint`) derived from client-go v0.X.
	k8s=$(module_version "$mod" k8s.io/client-go)
	k8s=${k8s#v0.}
	k8s=${k8s%%.*}
	local ldflags="-X helm.sh/helm/v3/internal/version.version=$version"
	ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
	local pkg
	for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
		ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s"
	done
	go_build helm "$mod" helm.sh/helm/v3/cmd/helm "$ldflags"
	write_stamp helm "$stamp"
}

# build_kueue: Kueue's controller manager, stamped as Kueue's Makefile does,
# and the webhook configurations Kueue installs (config/components/webhook,
# before kustomize names them), which the tests register for it.
build_kueue() {
	local mod="$tools_dir/kueue" version dir
	version=$(module_version "$mod" sigs.k8s.io/kueue)
	[ "$version" = "$KUEUE_VERSION" ] ||
		die "hack/tools/kueue requires sigs.k8s.io/kueue $version, not KUEUE_VERSION=$KUEUE_VERSION: keep them equal"
	local stamp="kueue $version format=$ASSETS_FORMAT $(sha256 "$mod/go.mod" "$mod/go.sum")"
	if up_to_date kueue "$stamp" "$out_dir/kueue" "$out_dir/kueue-webhooks.yaml"; then
		log "kueue $version is up to date"
		return
	fi
	# Inside the tools module, so the download is checked against its go.sum.
	local json commit
	json=$(go -C "$mod" mod download -json "sigs.k8s.io/kueue@$version") ||
		die "unable to download sigs.k8s.io/kueue@$version: $json"
	dir=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
	[ -n "$dir" ] && [ -f "$dir/config/components/webhook/manifests.yaml" ] ||
		die "sigs.k8s.io/kueue@$version has no config/components/webhook/manifests.yaml"
	# The tag's commit, when the proxy reports where the version came from.
	commit=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]*\)",\{0,1\}$/\1/p')
	local ldflags="-X sigs.k8s.io/kueue/pkg/version.GitVersion=$version"
	[ -z "$commit" ] || ldflags+=" -X sigs.k8s.io/kueue/pkg/version.GitCommit=$commit"
	go_build kueue "$mod" sigs.k8s.io/kueue/cmd/kueue "$ldflags"
	cp "$dir/config/components/webhook/manifests.yaml" "$out_dir/.kueue-webhooks.yaml.tmp"
	chmod u+w "$out_dir/.kueue-webhooks.yaml.tmp" # the module cache is read-only
	mv -f "$out_dir/.kueue-webhooks.yaml.tmp" "$out_dir/kueue-webhooks.yaml"
	write_stamp kueue "$stamp"
}

# build_promtool: Prometheus' rule checker and unit-test runner, stamped as
# Prometheus' own build does (promu sets common's version package) with the
# release the module version stands for: Prometheus 3.x is published as
# v0.3XX.Y for release 3.XX.Y. Built with Prometheus' remove_all_sd tag:
# without the cloud service discoveries (AWS, Azure, GCE, ...), which rule
# checks and unit tests never use, it compiles in well under half the CPU.
PROMTOOL_TAGS=remove_all_sd
build_promtool() {
	local mod="$tools_dir/prometheus" version
	version=$(module_version "$mod" github.com/prometheus/prometheus)
	# The root module's PromQL parser (test/chartqueries) and promtool are
	# one Prometheus.
	local root_version
	root_version=$(module_version "$repo_root" github.com/prometheus/prometheus)
	[ "$version" = "$root_version" ] ||
		die "hack/tools/prometheus requires github.com/prometheus/prometheus $version, go.mod $root_version: keep them equal"
	local stamp="promtool $version tags=$PROMTOOL_TAGS format=$ASSETS_FORMAT $(sha256 "$mod/go.mod" "$mod/go.sum")"
	if up_to_date promtool "$stamp" "$out_dir/promtool"; then
		log "promtool $version is up to date"
		return
	fi
	local release=${version#v0.}
	release="${release:0:1}.${release:1}"
	local ldflags="-X github.com/prometheus/common/version.Version=$release"
	GOFLAGS="${GOFLAGS:-} -tags=$PROMTOOL_TAGS" \
		go_build promtool "$mod" github.com/prometheus/prometheus/cmd/promtool "$ldflags"
	write_stamp promtool "$stamp"
}

# build_krew: krew's manifest validator and krew (as kubectl-krew, the name
# kubectl runs it by), from one pinned module.
build_krew() {
	local mod="$tools_dir/krew" version
	version=$(module_version "$mod" sigs.k8s.io/krew)
	local stamp="krew $version format=$ASSETS_FORMAT $(sha256 "$mod/go.mod" "$mod/go.sum")"
	if up_to_date krew "$stamp" "$out_dir/validate-krew-manifest" "$out_dir/kubectl-krew"; then
		log "krew $version is up to date"
		return
	fi
	go_build validate-krew-manifest "$mod" sigs.k8s.io/krew/cmd/validate-krew-manifest ""
	go_build kubectl-krew "$mod" sigs.k8s.io/krew/cmd/krew "-X sigs.k8s.io/krew/internal/version.gitTag=$version"
	write_stamp krew "$stamp"
}

# copy_module_crds <asset> <module> <version> <folder in the module> <dest> [glob]:
# copies the files matching glob (default *.yaml) of a folder of a Go module
# (downloaded from the proxy and verified against the checksum database)
# into <dest>.
copy_module_crds() {
	local name=$1 module=$2 version=$3 sub=$4 dest=$5 glob=${6:-*.yaml}
	local stamp="$name $version format=$ASSETS_FORMAT"
	if up_to_date "$name" "$stamp" "$dest"; then
		log "$module $version CRDs are up to date"
		return
	fi
	log "copying $module $version CRDs from the module cache ..."
	local tmp json dir
	tmp=$(mktemp -d)
	# Outside any module, so the download touches no go.mod.
	if ! json=$(cd "$tmp" && go mod download -json "$module@$version"); then
		rmdir "$tmp"
		printf '%s\n' "$json" >&2
		die "unable to download $module@$version"
	fi
	rmdir "$tmp"
	dir=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
	[ -n "$dir" ] && [ -d "$dir/$sub" ] ||
		die "$module@$version has no $sub"
	rm -rf "$dest.tmp" "$dest"
	mkdir -p "$dest.tmp"
	# shellcheck disable=SC2086 # the glob is meant to expand
	cp "$dir/$sub"/$glob "$dest.tmp/"
	chmod -R u+w "$dest.tmp" # the module cache is read-only
	mv "$dest.tmp" "$dest"
	log "copied $(ls "$dest" | wc -l | tr -d ' ') CRDs to $dest"
	write_stamp "$name" "$stamp"
}

mkdir -p "$out_dir"
total_start=$SECONDS
for asset in "${assets[@]}"; do
	case "$asset" in
	kube-apiserver | kube-controller-manager | kube-scheduler | kubectl) build_kubernetes "$asset" ;;
	etcd) build_etcd ;;
	helm) build_helm ;;
	kueue) build_kueue ;;
	promtool) build_promtool ;;
	krew) build_krew ;;
	cert-manager-crds)
		copy_module_crds cert-manager-crds github.com/cert-manager/cert-manager "$CERT_MANAGER_VERSION" \
			deploy/crds "$out_dir/crds/cert-manager"
		;;
	kueue-crds)
		copy_module_crds kueue-crds sigs.k8s.io/kueue "$KUEUE_VERSION" \
			config/components/crd/bases "$out_dir/crds/kueue"
		;;
	workload-crds)
		copy_module_crds workload-crds-jobset sigs.k8s.io/jobset "$JOBSET_VERSION" \
			config/components/crd/bases "$out_dir/crds/jobset"
		copy_module_crds workload-crds-lws sigs.k8s.io/lws "$LWS_VERSION" \
			config/crd/bases "$out_dir/crds/lws"
		copy_module_crds workload-crds-trainer github.com/kubeflow/trainer/v2 "$TRAINER_VERSION" \
			charts/kubeflow-trainer/crds "$out_dir/crds/trainer"
		copy_module_crds workload-crds-mpi-operator github.com/kubeflow/mpi-operator "$MPI_OPERATOR_VERSION" \
			manifests/base "$out_dir/crds/mpi-operator" 'kubeflow.org_*.yaml'
		copy_module_crds workload-crds-kuberay github.com/ray-project/kuberay/ray-operator "$KUBERAY_VERSION" \
			config/crd/bases "$out_dir/crds/kuberay"
		;;
	prometheus-operator-crds)
		copy_module_crds prometheus-operator-crds github.com/prometheus-operator/prometheus-operator "$PROMETHEUS_OPERATOR_VERSION" \
			example/prometheus-operator-crd "$out_dir/crds/prometheus-operator"
		;;
	openreports-crds)
		# The version the root module builds its Report types from.
		openreports_version=$(cd "$repo_root" && go list -m -f '{{.Version}}' github.com/openreports/reports-api) ||
			die "the root go.mod requires no github.com/openreports/reports-api"
		copy_module_crds openreports-crds github.com/openreports/reports-api "$openreports_version" \
			config/crd "$out_dir/crds/openreports"
		;;
	esac
done
log "assets ready in $out_dir ($((SECONDS - total_start))s)"
