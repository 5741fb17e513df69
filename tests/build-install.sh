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

ansible-galaxy collection build --force --output-path "$work/dist" "$top" >/dev/null
tarball=$(ls "$work"/dist/amx-cluster-*.tar.gz)

printf '[defaults]\ncollections_path = %s/collections\n' "$work" >"$work/ansible.cfg"
export ANSIBLE_CONFIG="$work/ansible.cfg"
cd "$work"
ansible-galaxy collection install --offline --no-deps --force -p "$work/collections" "$tarball" >/dev/null
installed="$work/collections/ansible_collections/amx/cluster"
test -f "$installed/MANIFEST.json"
ansible-galaxy collection list amx.cluster | grep -q "^amx.cluster "
for excluded in tests molecule Makefile .ci .cache .venv; do
  if [ -e "$installed/$excluded" ]; then
    echo "build-install: $excluded is in the tarball; add it to build_ignore in galaxy.yml" >&2
    exit 1
  fi
done
echo "build-install: $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KiB) builds, installs and resolves as amx.cluster"
