#!/usr/bin/env bash
# Runs every check of the project, goes on past a failure so one run shows everything, and ends with a
# summary: one line per check with its time, then "checks: N passed, N failed".
# Usage: run-checks.sh NAME=COMMAND...   (each COMMAND is run with bash -c from the repository root)
set -uo pipefail
passed=0 failed=0
summary=()
for spec in "$@"; do
  name=${spec%%=*} cmd=${spec#*=}
  printf '\n=== %s: %s\n' "$name" "$cmd"
  start=$(date +%s)
  if bash -c "$cmd"; then
    result=ok; passed=$((passed + 1))
  else
    result=FAILED; failed=$((failed + 1))
  fi
  summary+=("$(printf '%-12s %-7s %5ss' "$name" "$result" "$(( $(date +%s) - start ))")")
done
printf '\n=== summary\n'
printf '%s\n' "${summary[@]}"
echo "checks: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
