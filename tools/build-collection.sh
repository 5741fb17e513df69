#!/usr/bin/env bash
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds the collection's tarball from the files git tracks (as they are in the work tree), so that what a user
# keeps in the checkout (an inventory of their own, a scratch file) never ships; galaxy.yml's build_ignore then
# leaves out the development files. Usage: tools/build-collection.sh OUTPUT_DIR [CHECKOUT]   (default: this one;
# prints the tarball's path)
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
cd "${2:-$(dirname "$0")/..}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git ls-files -z | while IFS= read -r -d '' file; do
  # A tracked file deleted in the work tree is not part of the collection.
  if [ -e "$file" ]; then cp --parents -- "$file" "$work/"; fi
done
ansible-galaxy collection build --force --output-path "$out" "$work" >/dev/null
version=$(python -c 'import yaml; print(yaml.safe_load(open("galaxy.yml"))["version"])')
echo "$out/amx-cluster-$version.tar.gz"
