#!/usr/bin/env bash
# The collection as users get it: build the tarball, install it into an empty collections folder, and run
# a playbook and a module from the installed copy (not from the checkout).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$top"
ansible-galaxy collection build --force --output-path "$work/dist" >/dev/null
tarball=$(ls "$work"/dist/amx-cluster-*.tar.gz)
ansible-galaxy collection install --offline --no-deps -p "$work/collections" "$tarball" >/dev/null
test -f "$work/collections/ansible_collections/amx/cluster/MANIFEST.json"
# From an unrelated folder, with only the installed copy on the collections path.
cd "$work"
export ANSIBLE_CONFIG=/dev/null ANSIBLE_COLLECTIONS_PATH="$work/collections"
ansible-galaxy collection list amx.cluster | grep -q "amx.cluster"
echo "build-install: $(basename "$tarball") builds and installs"
