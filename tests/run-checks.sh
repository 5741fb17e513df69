#!/usr/bin/env bash
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs every check of the project, goes on past a failure so one run shows everything, and ends with a
# summary: the last lines of each failed check, then its last failure lines (Ansible's "fatal:" and "FAILED!",
# pytest's "E " lines, a traceback, each with what follows: a failed scenario's own last lines are its recap and
# teardown, so only these put the cause at the end of a CI log), one line per check with its time, then
# "checks: N passed, N failed".
# Usage: run-checks.sh [-j N] NAME=COMMAND...   (each COMMAND is run with bash -c from the repository root)
# With -j N, up to N checks run at once, started in the order given (put the long ones first); their output is
# interleaved, each line prefixed with its check's name.
set -uo pipefail
parallel=1
if [ "${1:-}" = -j ]; then
  parallel=$2
  shift 2
fi
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
run_started=$(date +%s)

run_check() {
  local name=$1 cmd=$2 start status
  start=$(date +%s)
  if [ "$parallel" -gt 1 ]; then
    bash -c "$cmd" 2>&1 | tee "$logs/$name.log" | sed -u "s/^/[$name] /"
  else
    bash -c "$cmd" 2>&1 | tee "$logs/$name.log"
  fi
  status=${PIPESTATUS[0]}
  if [ "$status" -eq 0 ]; then echo ok >"$logs/$name.result"; else echo FAILED >"$logs/$name.result"; fi
  echo $(( $(date +%s) - start )) >"$logs/$name.seconds"
}

running=0
for spec in "$@"; do
  name=${spec%%=*} cmd=${spec#*=}
  if [ "$running" -ge "$parallel" ]; then
    wait -n
    running=$((running - 1))
  fi
  printf '\n=== %s: %s\n' "$name" "$cmd"
  run_check "$name" "$cmd" &
  running=$((running + 1))
done
wait

passed=0 failed=0
for spec in "$@"; do
  name=${spec%%=*}
  if [ "$(cat "$logs/$name.result")" = ok ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf '\n=== %s failed; its last lines:\n' "$name"
    tail -n 40 "$logs/$name.log"
    printf '\n=== %s failed; where (its last failure lines, cut at 300 characters):\n' "$name"
    grep -a -A 6 -E 'fatal: \[|FAILED! =>|ERROR!|^E   |Traceback' "$logs/$name.log" | cut -c 1-300 | tail -n 60
  fi
done
printf '\n=== summary (%s at once)\n' "$parallel"
for spec in "$@"; do
  name=${spec%%=*}
  printf '%-22s %-7s %5ss\n' "$name" "$(cat "$logs/$name.result")" "$(cat "$logs/$name.seconds")"
done
echo "checks: $passed passed, $failed failed, $(( $(date +%s) - run_started ))s in all"
[ "$failed" -eq 0 ]
