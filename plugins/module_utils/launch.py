# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Launch rendering: the environment and the exact ``mpirun`` command of a training run.

:func:`launch_env` and :func:`launch_command` take a layout (:mod:`.layout`) and a flag dialect
(:mod:`.dialect`) and render what the recipe types by hand on the master::

    source <oneCCL setvars.sh>                      # when the oneCCL binding is installed
    export MASTER_ADDR=... NUM_PROCESSES=... NUM_PROCESSES_PER_NODE=... \\
           CCL_WORKER_COUNT=... CCL_WORKER_AFFINITY=... KMP_HW_SUBSET=1T
    mpirun -f ~/hosts -n N -ppn M -genv OMP_NUM_THREADS=T -genv LD_PRELOAD=... \\
           python3 SCRIPT ARGS... DIALECT FLAGS... [--bf16]

Hydra launchers (MPICH, Intel MPI) hand the exported environment to every rank on every node;
``-genv`` sets a variable for all ranks explicitly. Standard library only (runs on targets too).
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Dict, Mapping, Optional, Sequence

GENV_DEFAULT = ("OMP_NUM_THREADS", "LD_PRELOAD")
ONECCL_SETVARS = "\"$({python} -c 'from oneccl_bindings_for_pytorch import cwd; print(cwd)')/env/setvars.sh\""
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class LaunchError(ValueError):
    """The layout, dialect and arguments do not make a runnable launch; the message says why."""


def shell_quote(arg: str) -> str:
    """Quote one argument for a POSIX shell, keeping a leading ``~/`` unquoted so it still expands."""
    if arg.startswith("~/") and len(arg) > 2:
        return "~/" + shlex.quote(arg[2:])
    return shlex.quote(arg)


def shell_join(argv: Sequence[str]) -> str:
    return " ".join(shell_quote(str(arg)) for arg in argv)


def _check_name(name: str) -> str:
    if not _NAME.match(str(name)):
        raise LaunchError(f"{name!r} is not a valid environment variable name")
    return str(name)


def launch_env(
    layout: Mapping[str, Any],
    dialect: Mapping[str, Any],
    master_addr: Optional[str] = None,
    master_port: Any = None,
    ld_preload: Optional[str] = None,
    kmp_hw_subset: Optional[str] = "1T",
    extra_env: Optional[Mapping[str, Any]] = None,
) -> Dict[str, str]:
    """All variables of the run, in the recipe's order, as strings.

    ``MASTER_ADDR`` (required across nodes and for ccl even on one node), ``MASTER_PORT`` when
    given (transformers defaults to 29500), ``NUM_PROCESSES``, ``NUM_PROCESSES_PER_NODE``, the
    ``CCL_*`` variables when the backend is ccl, ``KMP_HW_SUBSET`` (physical cores only; acts
    with Intel OpenMP), ``OMP_NUM_THREADS``, ``LD_PRELOAD`` (the node's tcmalloc) and ``extra_env``.
    """
    for key in ("num_processes", "processes_per_node", "nodes", "omp_num_threads", "ccl_worker_count"):
        if key not in layout:
            raise LaunchError(f"layout lacks {key!r}: pass the result of rank_layout")
    for key in ("backend", "world_size", "flags"):
        if key not in dialect:
            raise LaunchError(f"dialect lacks {key!r}: pass the result of flag_dialect")
    world = int(layout["num_processes"])
    if int(dialect["world_size"]) != world:
        raise LaunchError(
            f"the dialect was computed for {dialect['world_size']} processes but the layout has {world}: "
            f"call flag_dialect with world_size={world}"
        )
    backend = dialect["backend"]
    workers = int(layout["ccl_worker_count"])
    if backend == "ccl" and workers < 1:
        raise LaunchError(
            "backend ccl needs CCL_WORKER_COUNT >= 1 (transformers refuses 0): set ccl_workers in the layout"
        )
    if not master_addr and (int(layout["nodes"]) > 1 or backend == "ccl"):
        reason = f"the job spans {int(layout['nodes'])} nodes" if int(layout["nodes"]) > 1 else "backend ccl"
        raise LaunchError(f"MASTER_ADDR is required ({reason}): pass master_addr, the master's private address")

    env: Dict[str, str] = {}
    if master_addr:
        env["MASTER_ADDR"] = str(master_addr)
    if master_port not in (None, ""):
        port = str(master_port)
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise LaunchError(f"master_port must be a TCP port number (1-65535), got {master_port!r}")
        env["MASTER_PORT"] = port
    env["NUM_PROCESSES"] = str(world)
    env["NUM_PROCESSES_PER_NODE"] = str(int(layout["processes_per_node"]))
    if backend == "ccl":
        env["CCL_WORKER_COUNT"] = str(workers)
        env["CCL_WORKER_AFFINITY"] = str(layout.get("ccl_worker_affinity") or "auto")
    if kmp_hw_subset:
        env["KMP_HW_SUBSET"] = str(kmp_hw_subset)
    env["OMP_NUM_THREADS"] = str(int(layout["omp_num_threads"]))
    # The per-local-rank cpulists of a pinned layout, for the rank wrapper (rank_exec.sh) to pin each rank.
    for name in ("AMX_CLUSTER_RANK_CPUS", "AMX_CLUSTER_RANK_OMP_CPUS"):
        if (layout.get("env") or {}).get(name):
            env[name] = str(layout["env"][name])
    if ld_preload:
        env["LD_PRELOAD"] = str(ld_preload)
    for name, value in (extra_env or {}).items():
        env[_check_name(name)] = str(value)
    return env


def launch_command(
    layout: Mapping[str, Any],
    dialect: Mapping[str, Any],
    script: str,
    script_args: Optional[Sequence[Any]] = None,
    hostfile: str = "~/hosts",
    python: str = "python3",
    launcher: Optional[str] = "mpirun",
    master_addr: Optional[str] = None,
    master_port: Any = None,
    ld_preload: Optional[str] = None,
    kmp_hw_subset: Optional[str] = "1T",
    bf16: bool = False,
    setvars: Optional[str] = None,
    extra_env: Optional[Mapping[str, Any]] = None,
    genv_names: Sequence[str] = GENV_DEFAULT,
) -> Dict[str, Any]:
    """Render the launch: ``argv`` (list), ``command`` (shell-quoted string), ``env`` (exported
    before the launcher), ``genv`` (passed with ``-genv NAME=VALUE``), ``setvars`` (the oneCCL
    ``setvars.sh`` line to source, or None) and ``script`` (a bash script doing all of it).

    The argument order is the recipe's: script arguments, then the dialect's flags, then
    ``--bf16``. Script arguments must not repeat a dialect flag (the dialect owns them).
    ``launcher=None`` renders a plain one-process run (``python3 SCRIPT ...`` with every
    variable exported), for the single-node check.
    """
    if not script:
        raise LaunchError("script is required: the training script to run (for example run_qa.py)")
    args = [str(arg) for arg in (script_args or [])]
    owned = [flag for flag in dialect.get("flags", []) if flag.startswith("--")] + (["--bf16"] if bf16 else [])
    clashes = sorted({arg.split("=", 1)[0] for arg in args} & set(owned))
    if clashes:
        raise LaunchError(
            "script_args repeat {}, which the launch adds itself (from the dialect or bf16): remove them".format(
                ", ".join(clashes)
            )
        )
    variables = launch_env(layout, dialect, master_addr, master_port, ld_preload, kmp_hw_subset, extra_env)
    world = int(layout["num_processes"])
    if launcher is None and world != 1:
        raise LaunchError(f"launcher=None runs one process, but the layout has {world}: use mpirun")

    genv: Dict[str, str] = {}
    env: Dict[str, str] = {}
    for name, value in variables.items():
        if launcher and name in genv_names:
            genv[name] = value
        else:
            env[name] = value

    tail = [str(python), str(script), *args, *[str(flag) for flag in dialect["flags"]]]
    if bf16:
        tail.append("--bf16")
    if launcher:
        argv = [str(launcher), "-f", str(hostfile), "-n", str(world), "-ppn", str(int(layout["processes_per_node"]))]
        for name in genv_names:
            if name in genv:
                argv.extend(["-genv", f"{name}={genv[name]}"])
        argv.extend(tail)
    else:
        argv = tail

    source: Optional[str] = None
    if dialect.get("oneccl_installed") or dialect.get("backend") == "ccl":
        source = shell_quote(str(setvars)) if setvars else ONECCL_SETVARS.format(python=shlex.quote(str(python)))

    command = shell_join(argv)
    lines = ["#!/usr/bin/env bash", "set -eo pipefail"]
    if source:
        lines.append("# shellcheck disable=SC1090")
        lines.append(f"source {source}")
    lines.extend(f"export {name}={shlex.quote(value)}" for name, value in env.items())
    lines.append(f"exec {command}")
    return {
        "argv": argv,
        "command": command,
        "env": env,
        "genv": genv,
        "setvars": source,
        "script": "\n".join(lines) + "\n",
    }
