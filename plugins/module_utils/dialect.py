# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Flag dialect: which command-line flags the installed transformers understands.

transformers renamed the flags that put a Trainer run on the CPU and pick the collective
backend. :func:`flag_dialect` maps the installed version (and whether IPEX and the oneCCL
binding are installed) to the flags a launch must pass. Version boundaries, checked against
transformers' ``TrainingArguments`` of each release:

==========================  ===============================================================
flag                        accepted by
==========================  ===============================================================
``--no_cuda``               < 5.0
``--use_cpu``               >= 4.32 (preferred from there on)
``--xpu_backend B``         < 4.32 (B in mpi, ccl, gloo)
``--ddp_backend B``         >= 4.29 (preferred from there on); ``ccl`` accepted < 5.1 only
``--use_ipex``              < 4.57 (deprecated from about 4.54)
==========================  ===============================================================

Runs under mpirun (ranks from ``PMI_RANK``/``PMI_SIZE``) need transformers >= 4.20.
A one-process run gets no backend flag: a backend without a process group fails in the
Trainer ("Default process group has not been initialized").
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

BACKENDS = ("auto", "ccl", "gloo", "mpi")

MIN_VERSION = (4, 20, 0)
DDP_BACKEND_SINCE = (4, 29, 0)
XPU_BACKEND_UNTIL = (4, 32, 0)
USE_CPU_SINCE = (4, 32, 0)
NO_CUDA_UNTIL = (5, 0, 0)
USE_IPEX_UNTIL = (4, 57, 0)
DDP_CCL_UNTIL = (5, 1, 0)


class DialectError(ValueError):
    """The installed stack cannot express the requested run; the message says what to change."""


def parse_version(version: Any) -> Tuple[int, int, int]:
    """``"4.24.0"`` -> ``(4, 24, 0)``; pre-release and local suffixes (``5.0.0rc1``, ``4.57.0.dev0``) are dropped."""
    text = str(version).strip()
    match = re.match(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?", text)
    if not match or not text:
        raise DialectError(f"cannot read a transformers version from {version!r}: expected something like 4.24.0")
    major, minor, patch = match.groups()
    return int(major), int(minor or 0), int(patch or 0)


def _dotted(version: Tuple[int, int, int]) -> str:
    return ".".join(str(part) for part in version)


def flag_dialect(
    transformers_version: Any,
    world_size: Any = 1,
    backend: str = "auto",
    oneccl_installed: bool = False,
    ipex_installed: bool = False,
    use_ipex: bool = False,
) -> Dict[str, Any]:
    """Return the CPU, backend and IPEX flags for this transformers version and world size.

    ``backend="auto"`` picks ``ccl`` when the oneCCL binding is installed and the version still
    accepts it, ``gloo`` otherwise. ``use_ipex=True`` asks for ``--use_ipex``; it is passed only
    when the version has the flag and IPEX is installed (``notes`` says why not otherwise).

    The result: ``flags`` (list of arguments, in the recipe's order: CPU flag, backend flag and
    value, then ``--use_ipex``), ``cpu_flag``, ``backend_flag``, ``backend``, ``use_ipex``,
    ``supports_use_ipex``, ``training_args`` (the same as ``TrainingArguments`` fields) and
    ``notes``. Raises :class:`DialectError` for an impossible request.
    """
    version = parse_version(transformers_version)
    if isinstance(world_size, bool) or not str(world_size).strip().isdigit() or int(world_size) < 1:
        raise DialectError(f"world_size must be an integer >= 1 (the number of ranks), got {world_size!r}")
    world = int(world_size)
    if backend not in BACKENDS:
        raise DialectError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if version < MIN_VERSION:
        raise DialectError(
            f"transformers {_dotted(version)} is too old: runs under mpirun need >= {_dotted(MIN_VERSION)} "
            "(ranks from PMI_RANK/PMI_SIZE); install a newer transformers"
        )

    notes: List[str] = []
    flags: List[str] = []
    training_args: Dict[str, Any] = {}

    cpu_flag = "--use_cpu" if version >= USE_CPU_SINCE else "--no_cuda"
    flags.append(cpu_flag)
    training_args[cpu_flag[2:]] = True

    ccl_ok = version < DDP_CCL_UNTIL
    chosen: Optional[str] = None
    backend_flag: Optional[str] = None
    if world == 1:
        notes.append("one process: no backend flag (a backend without a process group fails)")
    else:
        if backend == "auto":
            if oneccl_installed and ccl_ok:
                chosen = "ccl"
            else:
                chosen = "gloo"
                if oneccl_installed:
                    notes.append(
                        f"transformers {_dotted(version)} no longer accepts the ccl backend "
                        f"(< {_dotted(DDP_CCL_UNTIL)} only): using gloo"
                    )
        else:
            chosen = backend
        if chosen == "ccl":
            if not ccl_ok:
                raise DialectError(
                    f"transformers {_dotted(version)} does not accept the ccl backend (removed in "
                    f"{_dotted(DDP_CCL_UNTIL)}): use backend gloo, or a transformers < {_dotted(DDP_CCL_UNTIL)} "
                    "with the oneCCL binding"
                )
            if not oneccl_installed:
                raise DialectError(
                    "backend ccl needs the oneCCL binding for PyTorch (oneccl_bindings_for_pytorch), "
                    "which is not installed: install it or use backend gloo"
                )
        if chosen == "mpi":
            notes.append("backend mpi needs a PyTorch built with MPI (stock wheels are not)")
        backend_flag = "--ddp_backend" if version >= DDP_BACKEND_SINCE else "--xpu_backend"
        flags.extend([backend_flag, str(chosen)])
        training_args[backend_flag[2:]] = chosen

    supports_ipex = version < USE_IPEX_UNTIL
    ipex_on = False
    if use_ipex:
        if not supports_ipex:
            notes.append(
                f"--use_ipex left out: transformers {_dotted(version)} has no such flag "
                f"(gone in {_dotted(USE_IPEX_UNTIL)})"
            )
        elif not ipex_installed:
            notes.append("--use_ipex left out: intel_extension_for_pytorch is not installed")
        else:
            ipex_on = True
            flags.append("--use_ipex")
            training_args["use_ipex"] = True

    return {
        "transformers_version": _dotted(version),
        "world_size": world,
        "cpu_flag": cpu_flag,
        "backend_flag": backend_flag,
        "backend": chosen,
        "oneccl_installed": bool(oneccl_installed),
        "ipex_installed": bool(ipex_installed),
        "supports_use_ipex": supports_ipex,
        "use_ipex": ipex_on,
        "flags": flags,
        "training_args": training_args,
        "notes": notes,
    }
