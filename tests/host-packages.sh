#!/usr/bin/env bash
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Debian packages the test suite needs on this machine, as bindep.txt lists them (every platform:dpkg line; the
# Docker engine is handled by tests/cluster/docker-engine.sh). Installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t wanted < <(awk '!/^[[:space:]]*(#|$)/ && /platform:dpkg/ {print $1}' bindep.txt)
[ "${#wanted[@]}" -gt 0 ] || { echo "host-packages: bindep.txt lists no platform:dpkg package" >&2; exit 1; }
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ "${#missing[@]}" -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "host-packages: missing ${missing[*]}; install them (apt-get install ${missing[*]}) or run as root" >&2
  exit 1
fi
echo "host-packages: installing ${missing[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
