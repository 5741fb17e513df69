#!/usr/bin/env bash
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Makes sure a Docker engine answers. Installs docker.io and starts dockerd when `docker info` fails;
# a daemon that already runs (ours or someone else's) is left alone.
set -euo pipefail

log=${DOCKERD_LOG:-/var/log/amx-cluster-dockerd.log}

if docker info >/dev/null 2>&1; then
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
  echo "docker-engine: installing docker.io" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi

echo "docker-engine: starting dockerd (log: $log)" >&2
nohup dockerd >"$log" 2>&1 &

for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    exit 0
  fi
  sleep 1
done
echo "docker-engine: dockerd did not answer within 60 s; see $log" >&2
tail -n 20 "$log" >&2 || true
exit 1
