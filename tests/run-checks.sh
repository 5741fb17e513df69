#!/usr/bin/env bash
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs every check of the project, goes on past a failure so one run shows everything, and ends with a
# summary: the last lines of each failed check (so the end of a CI log shows the cause), one line per check
# with its time, then "checks: N passed, N failed".
# Usage: run-checks.sh NAME=COMMAND...   (each COMMAND is run with bash -c from the repository root)
set -uo pipefail
passed=0 failed=0
summary=()
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
for spec in "$@"; do
  name=${spec%%=*} cmd=${spec#*=}
  printf '\n=== %s: %s\n' "$name" "$cmd"
  start=$(date +%s)
  if bash -c "$cmd" 2>&1 | tee "$logs/$name.log"; then
    result=ok; passed=$((passed + 1))
  else
    result=FAILED; failed=$((failed + 1))
  fi
  summary+=("$(printf '%-12s %-7s %5ss' "$name" "$result" "$(( $(date +%s) - start ))")")
done
for spec in "$@"; do
  name=${spec%%=*}
  if printf '%s\n' "${summary[@]}" | grep -q "^$name  *FAILED"; then
    printf '\n=== %s failed; its last lines:\n' "$name"
    tail -n 60 "$logs/$name.log"
  fi
done
printf '\n=== summary\n'
printf '%s\n' "${summary[@]}"
echo "checks: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
