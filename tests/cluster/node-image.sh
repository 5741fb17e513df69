#!/usr/bin/env bash
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds the test node image from Debian's mirror (no registry is reachable) and prints its tag.
# The tag carries a hash of this recipe, so the image is rebuilt only when the recipe changes.
set -euo pipefail

suite=bookworm
packages=python3,openssh-server,sudo,procps,iproute2,ca-certificates
user=${NODE_IMAGE_USER:-amx}
recipe_hash=$( { cat "$0"; echo "$suite $packages $user"; } | sha256sum | cut -c1-12)
tag="amx-cluster-node:${suite}-${recipe_hash}"

if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "$tag"
  exit 0
fi

# Take the mirror from this machine's apt sources rather than writing one into the repository.
mirror=$(grep -rhoE '^(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
  | grep -oE 'https?://[^ ]+' | grep -v -- '-security' | head -n 1 || true)
if [ -z "$mirror" ]; then
  echo "node-image: no Debian mirror found in /etc/apt/sources.list*; set one there first" >&2
  exit 1
fi

command -v debootstrap >/dev/null 2>&1 || {
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
}

rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT
echo "node-image: debootstrap $suite from $mirror" >&2
debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$mirror" >/dev/null

# Host keys are made when a container starts (see the entrypoint), so every node has its own.
rm -f "$rootfs"/etc/ssh/ssh_host_*
mkdir -p "$rootfs/run/sshd"
chroot "$rootfs" useradd --create-home --shell /bin/bash "$user"
echo "$user ALL=(ALL) NOPASSWD:ALL" >"$rootfs/etc/sudoers.d/$user"
chmod 0440 "$rootfs/etc/sudoers.d/$user"
cat >"$rootfs/usr/local/sbin/node-entrypoint" <<'ENTRY'
#!/bin/sh
set -eu
ssh-keygen -A >/dev/null
exec /usr/sbin/sshd -D -e
ENTRY
chmod 0755 "$rootfs/usr/local/sbin/node-entrypoint"
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*

tar -C "$rootfs" -c . | docker import \
  --change 'CMD ["/usr/local/sbin/node-entrypoint"]' \
  --change 'EXPOSE 22' - "$tag" >/dev/null
echo "$tag"
