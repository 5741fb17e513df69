#!/usr/bin/env bash
# Debian packages the test suite needs on this machine (the Docker engine is handled by
# tests/cluster/docker-engine.sh). Installs only what is missing.
set -euo pipefail
wanted=(debootstrap git openssh-client mpich shellcheck)
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
