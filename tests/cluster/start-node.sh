#!/usr/bin/env bash
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Starts (or finds) one test node and prints one JSON line: its address, its SSH host key, and whether it
# was started now. Usage: start-node.sh NAME NETWORK IMAGE LABEL PUBLIC_KEY_FILE [extra docker run args...]
set -euo pipefail
name=$1 network=$2 image=$3 label=$4 pubkey_file=$5
shift 5

started=false
if [ "$(docker inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" != true ]; then
  docker rm -f "$name" >/dev/null 2>&1 || true
  docker run -d --name "$name" --hostname "$name" --network "$network" \
    --label "amx-cluster-test=$label" "$@" "$image" >/dev/null
  started=true
fi

# Root and the sudo user accept the run's key.
docker exec -e KEY="$(cat "$pubkey_file")" "$name" sh -c '
  for home in /root /home/amx; do
    install -d -m 0700 "$home/.ssh"
    grep -qxF "$KEY" "$home/.ssh/authorized_keys" 2>/dev/null || echo "$KEY" >>"$home/.ssh/authorized_keys"
    chmod 0600 "$home/.ssh/authorized_keys"
  done
  chown -R amx:amx /home/amx/.ssh'

# The entrypoint makes the host keys just before sshd starts: wait for sshd to listen.
for _ in $(seq 1 50); do
  if docker exec "$name" sh -c 'test -s /etc/ssh/ssh_host_ed25519_key.pub && ss -ltn | grep -q ":22 "'; then
    break
  fi
  sleep 0.2
done
host_key=$(docker exec "$name" cat /etc/ssh/ssh_host_ed25519_key.pub | cut -d' ' -f1,2)
address=$(docker inspect -f "{{(index .NetworkSettings.Networks \"$network\").IPAddress}}" "$name")
printf '{"name": "%s", "address": "%s", "host_key": "%s", "started": %s}\n' \
  "$name" "$address" "$host_key" "$started"
