#!/usr/bin/env bash
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Starts (or finds) one test node and prints one JSON line: its address on NETWORK, its SSH host key, and whether
# it was started now. Usage: start-node.sh NAME NETWORK IMAGE LABEL PUBLIC_KEY_FILE [extra docker run args...]
# A fleet's node differs from the image's defaults through the environment:
#   NODE_USER      the sudo user that logs in (default amx, the image's; another one is made on the spot)
#   NODE_SSH_PORT  the port sshd listens on (default 22)
#   NODE_NETWORKS  more networks to attach, space separated (they get eth1, eth2, ... in that order)
set -euo pipefail
name=$1 network=$2 image=$3 label=$4 pubkey_file=$5
shift 5
user=${NODE_USER:-amx}
port=${NODE_SSH_PORT:-22}

started=false
if [ "$(docker inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" != true ]; then
  docker rm -f "$name" >/dev/null 2>&1 || true
  command=()
  if [ "$port" != 22 ]; then
    command=(/bin/sh -c "ssh-keygen -A >/dev/null && exec /usr/sbin/sshd -D -e -p $port")
  fi
  docker run -d --name "$name" --hostname "$name" --network "$network" \
    --label "amx-cluster-test=$label" "$@" "$image" "${command[@]}" >/dev/null
  for extra in ${NODE_NETWORKS:-}; do
    docker network connect "$extra" "$name"
  done
  started=true
fi

# Root and the sudo user accept the run's key.
docker exec -e KEY="$(cat "$pubkey_file")" -e NODE_USER="$user" "$name" sh -c '
  set -e
  if ! id -u "$NODE_USER" >/dev/null 2>&1; then
    useradd --create-home --shell /bin/bash "$NODE_USER"
    echo "$NODE_USER ALL=(ALL) NOPASSWD:ALL" >"/etc/sudoers.d/$NODE_USER"
    chmod 0440 "/etc/sudoers.d/$NODE_USER"
  fi
  for home in /root "$(getent passwd "$NODE_USER" | cut -d: -f6)"; do
    install -d -m 0700 "$home/.ssh"
    grep -qxF "$KEY" "$home/.ssh/authorized_keys" 2>/dev/null || echo "$KEY" >>"$home/.ssh/authorized_keys"
    chmod 0600 "$home/.ssh/authorized_keys"
  done
  chown -R "$NODE_USER:" "$(getent passwd "$NODE_USER" | cut -d: -f6)/.ssh"'

# The host keys are made just before sshd starts: wait for sshd to listen (a minute at most: a busy machine).
listening=false
for _ in $(seq 1 300); do
  if docker exec "$name" sh -c "test -s /etc/ssh/ssh_host_ed25519_key.pub && ss -ltn | grep -q ':$port '"; then
    listening=true
    break
  fi
  sleep 0.2
done
if [ "$listening" != true ]; then
  echo "start-node: sshd in $name is not listening on port $port after a minute (docker logs $name)" >&2
  exit 1
fi
host_key=$(docker exec "$name" cat /etc/ssh/ssh_host_ed25519_key.pub | cut -d' ' -f1,2)
address=$(docker inspect -f "{{(index .NetworkSettings.Networks \"$network\").IPAddress}}" "$name")
printf '{"name": "%s", "address": "%s", "port": %s, "user": "%s", "host_key": "%s", "started": %s}\n' \
  "$name" "$address" "$port" "$user" "$host_key" "$started"
