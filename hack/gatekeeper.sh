#!/usr/bin/env bash
# Builds the Gatekeeper that `make bench-webhook` measures Mandate against:
#   gatekeeper        from github.com/open-policy-agent/gatekeeper/v3 (the
#                     module's own main package, the manager binary)
#   crds/gatekeeper/  the CRDs it ships (charts/gatekeeper/crds), which the
#                     bench installs into its envtest API server
#
# The module comes from the Go module proxy (`go mod download` verifies it
# against the checksum database) and is built in a writable copy with its own
# go.mod/go.sum: Gatekeeper is not a dependency of Mandate and `go install`
# does not build modules that carry replace directives. Output goes to bin/k8s/
# (override with ENVTEST_ASSETS_DIR), next to the other pinned assets.
#
# Idempotent: a stamp records the version; the build (several minutes on two
# cores) runs only when the binary is missing or the version changed.
#
# Usage: hack/gatekeeper.sh [--force]
set -euo pipefail

GATEKEEPER_VERSION=v3.23.1
GATEKEEPER_MODULE=github.com/open-policy-agent/gatekeeper/v3

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out_dir=${ENVTEST_ASSETS_DIR:-$repo_root/bin/k8s}

force=false
for arg in "$@"; do
	case "$arg" in
	--force) force=true ;;
	-h | --help)
		sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "gatekeeper: unknown argument: $arg" >&2
		exit 2
		;;
	esac
done

log() { echo "gatekeeper: $*" >&2; }
die() {
	log "ERROR: $*"
	exit 1
}
command -v go >/dev/null 2>&1 || die "go is not on PATH"

stamp="gatekeeper $GATEKEEPER_VERSION format=1"
stamp_file="$out_dir/.gatekeeper.stamp"
if ! "$force" && [ -x "$out_dir/gatekeeper" ] && [ -d "$out_dir/crds/gatekeeper" ] &&
	[ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ]; then
	log "gatekeeper $GATEKEEPER_VERSION is up to date"
	exit 0
fi

mkdir -p "$out_dir"
# -json prints the module's extracted directory (read-only in the module cache).
mod_dir=$(go mod download -json "$GATEKEEPER_MODULE@$GATEKEEPER_VERSION" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$mod_dir" ] && [ -d "$mod_dir" ] || die "unable to download $GATEKEEPER_MODULE@$GATEKEEPER_VERSION"

src="$out_dir/.gatekeeper-src"
rm -rf "$src"
cp -R "$mod_dir" "$src"
chmod -R u+w "$src"

start=$SECONDS
log "building gatekeeper $GATEKEEPER_VERSION (several minutes on a small machine) ..."
CGO_ENABLED=0 GOFLAGS=-mod=mod go -C "$src" build -trimpath -ldflags="-s -w" -o "$out_dir/.gatekeeper.tmp" .
mv -f "$out_dir/.gatekeeper.tmp" "$out_dir/gatekeeper"
log "built $out_dir/gatekeeper in $((SECONDS - start))s"

rm -rf "$out_dir/crds/gatekeeper"
mkdir -p "$out_dir/crds/gatekeeper"
cp "$src"/charts/gatekeeper/crds/*.yaml "$out_dir/crds/gatekeeper/"
chmod -R u+w "$out_dir/crds/gatekeeper"
rm -rf "$src"
printf '%s\n' "$stamp" >"$stamp_file"
