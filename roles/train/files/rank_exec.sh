#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs one rank of an amx.cluster training run and, when the rank ends badly, says which rank it was and how,
# before the launcher learns about it and ends the others:
#   amx.cluster: rank 3 ended: signal 9 (KILL), pid 4242 on ip-10-0-0-12
# mpirun starts it in front of the interpreter (mpirun ... rank_exec.sh python3 script.py ...). Signals the
# launcher sends (TERM, INT, HUP, USR1, USR2) are passed on to the rank; a rank killed by a signal makes the
# wrapper end by the same signal.
set -u

"$@" &
child=$!
for sig in TERM INT HUP USR1 USR2; do
  # shellcheck disable=SC2064  # the signal name is meant to be expanded now
  trap "kill -${sig} ${child} 2>/dev/null" "${sig}"
done

while :; do
  wait "${child}" 2>/dev/null
  rc=$?
  # wait returns early when a trapped signal arrives: wait again until the rank is really gone.
  kill -0 "${child}" 2>/dev/null || break
done

if ((rc > 128)); then
  how="signal $((rc - 128)) ($(kill -l $((rc - 128)) 2>/dev/null || echo '?'))"
else
  how="exit code ${rc}"
fi
if ((rc != 0)); then
  printf 'amx.cluster: rank %s ended: %s, pid %s on %s\n' \
    "${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-?}}" "${how}" "${child}" "$(hostname)" >&2
fi
if ((rc > 128)); then
  # End the same way the rank did, so that the launcher reacts as it would without this wrapper
  # (Hydra ends every other rank at once when one is killed by a signal).
  trap - TERM INT HUP USR1 USR2
  kill -s "$((rc - 128))" "$$" 2>/dev/null
fi
exit "${rc}"
