#!/usr/bin/env bash
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The collection as users get it: build the tarball, install it into an empty collections folder, and use
# it from an unrelated folder whose configuration knows only that folder (not the checkout).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

tarball=$(bash "$top/tools/build-collection.sh" "$work/dist")

# Only what an installed collection uses: its content, its docs and release notes, the controller's requirements.
allowed="CHANGELOG.rst COPYING FILES.json MANIFEST.json README.md bindep.txt changelogs docs inventory meta playbooks
plugins requirements.txt roles"
for name in $(tar tzf "$tarball" | cut -d/ -f1 | sort -u); do
  if ! grep -qw -- "$name" <<<"$allowed"; then
    echo "build-install: $name is in the tarball: an installed collection does not use it (galaxy.yml build_ignore)" >&2
    exit 1
  fi
done
for dev in ansible.cfg .ansible-lint .yamllint changelogs/fragments changelogs/config.yaml inventory/local.yml; do
  if tar tzf "$tarball" | grep -qx -- "$dev/\?"; then
    echo "build-install: $dev is in the tarball; add it to build_ignore in galaxy.yml" >&2
    exit 1
  fi
done
# Files the checkout holds but git does not track (a user's inventory from docs/EC2.md's walk-through, a scratch
# module) stay out: built from a clone of this checkout that has two such files.
git clone --quiet --no-hardlinks "$top" "$work/clone"
touch "$work/clone/try.ec2_cluster.yml" "$work/clone/plugins/modules/scratch.py"
untracked_build=$(bash "$top/tools/build-collection.sh" "$work/untracked" "$work/clone")
if tar tzf "$untracked_build" | grep -E '^(try\.ec2_cluster\.yml|plugins/modules/scratch\.py)$'; then
  echo "build-install: files git does not track went into the tarball (tools/build-collection.sh)" >&2
  exit 1
fi

printf '[defaults]\ncollections_path = %s/collections\n' "$work" >"$work/ansible.cfg"
export ANSIBLE_CONFIG="$work/ansible.cfg"
cd "$work"
ansible-galaxy collection install --offline --no-deps --force -p "$work/collections" "$tarball" >/dev/null
installed="$work/collections/ansible_collections/amx/cluster"
test -f "$installed/MANIFEST.json"
ansible-galaxy collection list amx.cluster | grep -q "^amx.cluster "
# The README's offline install: without --no-deps, --offline must find the dependencies (galaxy.yml) where the
# `ansible` package put them.
if ansible-galaxy collection list amazon.aws 2>/dev/null | grep -q "^amazon.aws " &&
  ansible-galaxy collection list ansible.posix 2>/dev/null | grep -q "^ansible.posix " &&
  ansible-galaxy collection list community.crypto 2>/dev/null | grep -q "^community.crypto "; then
  rm -rf "$work/offline"
  printf '[defaults]\ncollections_path = %s/offline\n' "$work" >"$work/ansible.cfg"
  ansible-galaxy collection install --offline -p "$work/offline" "$tarball" >"$work/offline.log" 2>&1 || {
    cat "$work/offline.log" >&2
    echo "build-install: the offline install (README, Installing) did not resolve its dependencies" >&2
    exit 1
  }
  test -f "$work/offline/ansible_collections/amx/cluster/MANIFEST.json"
  printf '[defaults]\ncollections_path = %s/collections\n' "$work" >"$work/ansible.cfg"
fi
for excluded in tests extensions Makefile .ci .cache .venv .collections requirements-dev.txt; do
  if [ -e "$installed/$excluded" ]; then
    echo "build-install: $excluded is in the tarball; add it to build_ignore in galaxy.yml" >&2
    exit 1
  fi
done
echo "build-install: $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KiB) builds, installs and resolves as amx.cluster"
