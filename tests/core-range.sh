#!/usr/bin/env bash
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The collection with another ansible-core than .venv's (requirements-dev.txt's, which every other check uses).
# Usage: core-range.sh PINS PYTHON [unit|plugin-unit]
#   PINS    a requirements file that pins ansible-core (tests/core-newest.txt: in `make test`; tests/core-oldest.txt:
#           a core older than meta/runtime.yml admits, to see what admitting it would take)
#   PYTHON  the virtualenv's Python: a version pyenv has (3.13, its newest patch under ~/.pyenv/versions) or a command
#   the third argument: the whole unit suite (unit, the default) or only tests/unit/plugins (plugin-unit)
# A virtualenv with that core, amazon.aws, ansible.posix and community.crypto as .venv has them, and the test tools at
# requirements-dev.txt's pins; then, in a copy of the checkout that uses it: every plugin's documentation loads,
# every playbook passes --syntax-check, the unit tests pass, and the provision, re-provision and teardown against
# the local EC2 API (moto) pass. Each step's time is printed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
pins=$1 python=$2 units=${3:-unit}
name=$(basename "$pins" .txt)
pin=$(grep -oP '^ansible-core==\K[0-9.]+' "$pins")
if [[ $python =~ ^[0-9]+\.[0-9]+$ ]]; then
  found=$(find "${PYENV_ROOT:-$HOME/.pyenv}/versions" -maxdepth 1 -name "$python.*" 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$found" ]; then
    echo "$name: no CPython $python found under ${PYENV_ROOT:-$HOME/.pyenv}/versions: install one (pyenv install $python)" >&2
    exit 1
  fi
  python=$found/bin/python$python
fi

step_start=$(date +%s)
step() {
  local now
  now=$(date +%s)
  echo "$name: $1 ($((now - step_start))s)"
  step_start=$now
}

# The collections come from .venv (the `ansible` bundle of requirements-dev.txt), copied: the bundle itself may
# not install on this Python, and its other collections are not used.
collections=$(.venv/bin/python -c 'import ansible_collections as m; print(list(m.__path__)[0])')
venv=$top/.cache/$name
if [ ! -x "$venv/bin/ansible" ] || ! "$venv/bin/ansible" --version | grep -q "core $pin\]" ||
  [ "$("$venv/bin/python" -V)" != "$("$python" -V)" ]; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
  tools=$(grep -E '^(boto3|moto\[server\]|pytest)==' requirements-dev.txt)
  # shellcheck disable=SC2086 # one requirement per word
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r requirements.txt -r "$pins" $tools 2>&1 |
    { grep -v "is ignored: it is neither a file nor a directory" || true; }
  step "virtualenv built"
fi
# Copied on every run, so that a virtualenv built before a dependency was added gets it too.
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
for dependency in amazon/aws ansible/posix community/crypto; do
  rm -rf "${site:?}/ansible_collections/$dependency"
  mkdir -p "$site/ansible_collections/${dependency%/*}"
  cp -r "$collections/$dependency" "$site/ansible_collections/${dependency%/*}/"
done
"$venv/bin/ansible" --version | sed -n '1p;/python version/p'

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
  step "ansible-doc reads the ${#names[@]} ${type} plugins"
done
for play in playbooks/*.yml; do
  ansible-playbook --syntax-check "$play" >/dev/null
done
step "every playbook passes --syntax-check"
if [ "$units" = plugin-unit ]; then suite=tests/unit/plugins; else suite=tests/unit; fi
pytest -q -p no:cacheprovider "$suite"
step "$suite passes"
pytest -q -p no:cacheprovider tests/integration/ec2/test_cloud_flow.py -k test_provision_inventory_reprovision_teardown
step "provision, re-provision and teardown against the local EC2 API pass"
