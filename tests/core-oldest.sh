#!/usr/bin/env bash
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# An older ansible-core than meta/runtime.yml admits (tests/core-oldest.txt), to see what admitting it would take; not
# part of `make test`. A virtualenv with that core and the same collections and test tools as .venv, then, in a copy
# of the checkout that uses it: every plugin's documentation loads, every playbook passes --syntax-check, the unit tests
# pass, and the provision, re-provision and teardown against the local EC2 API (moto) pass.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

pin=$(grep -oP '^ansible-core==\K[0-9.]+' tests/core-oldest.txt)

# The venv: the pinned core, the `ansible` bundle's collections (the same as .venv's, without its core), and the
# test tools at requirements-dev.txt's pins.
venv=$top/.cache/core-oldest
if [ ! -x "$venv/bin/ansible" ] || ! "$venv/bin/ansible" --version | grep -q "core $pin\]"; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  tools=$(grep -E '^(boto3|moto\[server\]|pytest)==' requirements-dev.txt)
  # shellcheck disable=SC2086 # one requirement per word
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r requirements.txt -r tests/core-oldest.txt $tools
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "$(grep -E '^ansible==' requirements-dev.txt)"
fi
"$venv/bin/ansible" --version | head -n 1

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
copy=$work/cluster
mkdir -p "$copy"
git ls-files -z | while IFS= read -r -d '' file; do
  if [ -e "$file" ]; then cp --parents -- "$file" "$copy/"; fi
done
ln -s "$venv" "$copy/.venv"
mkdir -p "$copy/.collections/ansible_collections/amx"
ln -s ../../.. "$copy/.collections/ansible_collections/amx/cluster"
cd "$copy"
export PATH=$copy/.venv/bin:$PATH ANSIBLE_CONFIG=$copy/ansible.cfg

for type in module filter inventory; do
  mapfile -t names < <(ansible-doc -t "$type" -l amx.cluster --json | python -c 'import json, sys; print("\n".join(json.load(sys.stdin)))')
  ansible-doc -t "$type" "${names[@]}" >/dev/null
  echo "core-oldest: ansible-doc reads the ${#names[@]} ${type} plugins"
done
for play in playbooks/*.yml; do
  ansible-playbook --syntax-check "$play" >/dev/null
done
echo "core-oldest: every playbook passes --syntax-check"
pytest -q -p no:cacheprovider tests/unit
pytest -q -p no:cacheprovider tests/integration/ec2/test_cloud_flow.py -k test_provision_inventory_reprovision_teardown
