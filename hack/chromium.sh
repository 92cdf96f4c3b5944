#!/usr/bin/env bash
# Installs Debian's chromium when it is missing, for the HTML report's
# headless-browser test (clusterreport). CI runs as root with Debian's
# packages; elsewhere, install chromium yourself.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "chromium is missing: install Debian's chromium package (apt-get install -y chromium) as root" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium >/dev/null
command -v chromium
