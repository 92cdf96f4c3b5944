#!/usr/bin/env bash
# Installs Debian's Slurm 22.05 (slurmctld, slurmd, slurmdbd, slurm-client),
# munge and mariadb-server when missing, for the real-Slurm test
# (test/slurm). CI runs as root with Debian's packages; elsewhere, install
# them yourself (the test is skipped without them when not root).
set -euo pipefail
missing=0
for c in slurmctld slurmd slurmdbd sacctmgr munged mariadbd; do
	command -v "$c" >/dev/null 2>&1 || missing=1
done
if [ "$missing" = 0 ]; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "Slurm is missing: install Debian's slurmctld slurmd slurmdbd slurm-client munge mariadb-server as root" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq slurmctld slurmd slurmdbd slurm-client munge mariadb-server >/dev/null
command -v slurmctld
