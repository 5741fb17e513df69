#!/usr/bin/env bash
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs one rank of an amx.cluster training run and, when the rank ends badly, says which rank it was and how,
# before the launcher learns about it and ends the others:
#   amx.cluster: rank 3 ended: signal 9 (KILL), pid 4242 on ip-10-0-0-12
# mpirun starts it in front of the interpreter (mpirun ... rank_exec.sh python3 script.py ...). Signals the
# launcher sends (TERM, INT, HUP, USR1, USR2) are passed on to the rank; a rank killed by a signal makes the
# wrapper end by the same signal.
#
# Pinning: when AMX_CLUSTER_RANK_CPUS holds one cpulist per local rank ("3-15;19-31", from the layout), the
# wrapper pins itself (and so the rank it starts) to the entry of its local rank (MPI_LOCALRANKID, which MPICH's
# and Intel MPI's Hydra set; else PMI_RANK modulo NUM_PROCESSES_PER_NODE; else 0) with taskset, and sets the
# OpenMP place list to the entry of AMX_CLUSTER_RANK_OMP_CPUS unless OMP_PLACES, OMP_PROC_BIND,
# GOMP_CPU_AFFINITY or KMP_AFFINITY is set already: one place of all the rank's OpenMP cores, so that its OpenMP
# threads stay off its oneCCL cores; not one place per core, which would bind the main thread to one core and
# with it every thread and process the rank starts later (gloo's, a DataLoader's workers). Every rank says once, on stderr, which CPUs it may use:
#   amx.cluster: rank 3 local 1 cpus 19-31
set -u

rank="${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-?}}"
if [[ -n "${MPI_LOCALRANKID:-}" ]]; then
  local_rank="${MPI_LOCALRANKID}"
elif [[ -n "${PMI_RANK:-}" && -n "${NUM_PROCESSES_PER_NODE:-}" ]]; then
  local_rank=$((PMI_RANK % NUM_PROCESSES_PER_NODE))
else
  local_rank=0
fi

pin_failed() {
  printf 'amx.cluster: rank %s local %s cannot be pinned: %s\n' "${rank}" "${local_rank}" "$1" >&2
  printf 'amx.cluster: rank %s ended: exit code %s, pid %s on %s\n' "${rank}" "$2" "$$" "$(hostname)" >&2
  exit "$2"
}

if [[ -n "${AMX_CLUSTER_RANK_CPUS:-}" ]]; then
  IFS=';' read -r -a rank_cpus <<<"${AMX_CLUSTER_RANK_CPUS}"
  if ((local_rank >= ${#rank_cpus[@]})); then
    pin_failed "AMX_CLUSTER_RANK_CPUS has ${#rank_cpus[@]} entries, none for local rank ${local_rank}" 1
  fi
  command -v taskset >/dev/null 2>&1 || pin_failed "taskset (util-linux) is not installed" 127
  if ! pin_error=$(taskset -pc "${rank_cpus[local_rank]}" "$$" 2>&1 >/dev/null); then
    pin_failed "taskset -pc ${rank_cpus[local_rank]}: ${pin_error}" 1
  fi
  if [[ -n "${AMX_CLUSTER_RANK_OMP_CPUS:-}" && -z "${OMP_PLACES:-}${OMP_PROC_BIND:-}${GOMP_CPU_AFFINITY:-}${KMP_AFFINITY:-}" ]]; then
    IFS=';' read -r -a omp_cpus <<<"${AMX_CLUSTER_RANK_OMP_CPUS}"
    place=""
    IFS=',' read -r -a runs <<<"${omp_cpus[local_rank]:-}"
    for run in "${runs[@]}"; do
      first="${run%-*}"
      last="${run#*-}"
      for ((cpu = first; cpu <= last; cpu++)); do
        place+="${place:+,}${cpu}"
      done
    done
    if [[ -n "${place}" ]]; then
      export OMP_PLACES="{${place}}" OMP_PROC_BIND=true
    fi
  fi
fi
allowed=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/$$/status" 2>/dev/null)
printf 'amx.cluster: rank %s local %s cpus %s\n' "${rank}" "${local_rank}" "${allowed:-?}" >&2

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
  printf 'amx.cluster: rank %s ended: %s, pid %s on %s\n' "${rank}" "${how}" "${child}" "$(hostname)" >&2
fi
if ((rc > 128)); then
  # End the same way the rank did, so that the launcher reacts as it would without this wrapper
  # (Hydra ends every other rank at once when one is killed by a signal).
  trap - TERM INT HUP USR1 USR2
  kill -s "$((rc - 128))" "$$" 2>/dev/null
fi
exit "${rc}"
