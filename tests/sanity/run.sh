#!/usr/bin/env bash
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# ansible-test sanity needs the collection under ansible_collections/amx/cluster: lay a copy of the
# tracked and new (not ignored) files out in a temporary folder, rather than moving the checkout.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The pip version ansible-test bootstraps, read from its own source.
requirements_py=$(python -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')/_internal/python_requirements.py
pip_version=$(grep -oP "pip='\K[0-9.]+" "$requirements_py" | head -n 1)
cache=~/.ansible/test/cache
mkdir -p "$cache"
cp "$top/tests/sanity/get_pip.py" "$cache/get_pip_${pip_version//./_}.py"

dest="$work/ansible_collections/amx/cluster"
mkdir -p "$dest"
(
  cd "$top"
  git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' file; do
    # A tracked file deleted in the work tree is not part of what gets tested.
    if [ -e "$file" ]; then cp --parents -- "$file" "$dest/"; fi
  done
)
# The AWS modules use amazon.aws's module base and doc fragments: ansible-test finds a dependency only beside the
# collection, as ansible_collections/amazon/aws (the one installed with Ansible is copied there, not tested).
amazon_aws=$(python -c 'import ansible_collections.amazon.aws as m; print(list(m.__path__)[0])')
mkdir -p "$work/ansible_collections/amazon"
cp -r "$amazon_aws" "$work/ansible_collections/amazon/aws"
cd "$dest"
git init -q . && git add -A >/dev/null
ansible-test sanity --python 3.11 --color no "$@"

# Node-side code (modules and module_utils) runs on the nodes' Python, down to the recipe's 3.8 (Ubuntu 20.04):
# ansible-test's compile test with that Python, which pyenv provides on these machines.
if [ $# -eq 0 ]; then
  python38=$(find "${PYENV_ROOT:-$HOME/.pyenv}/versions" -maxdepth 1 -name '3.8.*' 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$python38" ]; then
    echo "sanity: no CPython 3.8 found (pyenv's, under ${PYENV_ROOT:-$HOME/.pyenv}/versions): install one" \
      "(pyenv install 3.8) so the node-side code is compiled with the recipe's Python" >&2
    exit 1
  fi
  PATH="$python38/bin:$PATH" ansible-test sanity --test compile --python 3.8 --color no
fi
