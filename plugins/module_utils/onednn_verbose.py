# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which kernels did the bf16 matrix work: oneDNN's verbose lines read into a record, and whether AMX ran.

oneDNN prints one line per primitive it runs when ``ONEDNN_VERBOSE=1`` (``DNNL_VERBOSE=1`` in builds before
oneDNN 2.5). The implementation field names the kernel and the instruction set it was built for, e.g.
``brg_matmul:avx512_core_amx`` (AMX ran) or ``brg_matmul:avx512_core_bf16`` (AVX-512 BF16, no AMX). The line's
layout changed over the versions; every one of these is read:

- ``dnnl_verbose,exec,cpu,matmul,IMPL,...`` (oneDNN 1.x, 2.x), ``onednn_verbose,exec,cpu,...`` (2.5 to 2.7);
- ``onednn_verbose,primitive,exec,cpu,...`` (3.0 to 3.3), ``onednn_verbose,v1,primitive,exec,cpu,...`` (3.4 on);
- any of them with a time stamp after the first field (``ONEDNN_VERBOSE_TIMESTAMP=1``) or with a prefix before
  it (a launcher's ``[rank]``).

The memory descriptors say the data type: ``src_bf16::blocked:ab:f0`` before oneDNN 3.4, ``src:bf16::blocked:...``
from 3.4. Standard library only (the smoke test's record is read on the controller).
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Mapping, Optional

__all__ = ["amx_used", "matmul_kernels", "parse_line", "run_kernels"]

# The primitives that do a matrix product (transformers' Linear layers run as matmul or inner_product).
MATRIX_PRIMITIVES = ("matmul", "inner_product")
_PREFIX = re.compile(r"(?:dnnl|onednn)_verbose,")
# An implementation's instruction-set part: avx512_core_amx, avx512_core_bf16, avx2, avx10_1_512_amx, sse41...
_ISA = re.compile(r"^(?:sse\d*|avx\w*|amx\w*)$")
_SRC_TYPE = re.compile(r"(?:^|\s)src[_:](\w+?)(?::|$|\s)")


def parse_line(line: str) -> Optional[Dict[str, Any]]:
    """One verbose line as {kind, engine, primitive, impl, isa, src_type}, or None for a line that is not one.

    ``kind``: ``exec`` for a primitive run, ``info`` for the header lines (``version`` or ``cpu_isa`` then hold
    what they say), anything else (``create:cache_miss``...) as printed."""
    if not isinstance(line, str):
        return None
    found = _PREFIX.search(line)
    if not found:
        return None
    fields = line[found.end() :].rstrip("\r\n").split(",")
    # Skip the version marker (v1), the time stamp and the "primitive" / "graph" component of oneDNN 3.x.
    while fields and (re.fullmatch(r"v\d+|\d+(?:\.\d+)?|primitive|graph|common", fields[0]) is not None):
        fields.pop(0)
    if not fields:
        return None
    kind = fields[0]
    if kind == "info":
        rest = ",".join(fields[1:])
        record: Dict[str, Any] = {"kind": "info"}
        if rest.startswith("oneDNN ") or rest.startswith("DNNL "):
            record["version"] = rest.split(" (", 1)[0]
        elif rest.startswith("cpu,isa:"):
            record["cpu_isa"] = rest[len("cpu,isa:") :]
        return record
    if len(fields) < 6:
        return None
    engine, primitive, impl = fields[1], fields[2], fields[3]
    parts = impl.split(":")
    isa = next((part for part in reversed(parts) if _ISA.match(part)), None)
    src = _SRC_TYPE.search(fields[5])
    return {
        "kind": kind,
        "engine": engine,
        "primitive": primitive,
        "impl": impl,
        "isa": isa,
        "src_type": src.group(1) if src else None,
    }


def matmul_kernels(lines: Iterable[str]) -> Dict[str, Any]:
    """What oneDNN ran for the bf16 matrix products among ``lines`` (a node's verbose output).

    Returns ``{"isa", "impl", "amx", "impls", "version", "cpu_isa", "reason"}``: ``isa`` and ``impl`` of the bf16
    matmul / inner_product runs on the CPU (the AMX one when one of them used AMX, else the first), ``amx`` whether
    an AMX kernel ran (None when no such line was printed: then ``reason`` says why), ``impls`` every distinct
    implementation seen for them, ``version`` and ``cpu_isa`` from oneDNN's header lines (None when absent)."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    version: Optional[str] = None
    cpu_isa: Optional[str] = None
    runs: List[Dict[str, Any]] = []
    seen_any = False
    for line in lines or []:
        parsed = parse_line(line)
        if parsed is None:
            continue
        seen_any = True
        if parsed["kind"] == "info":
            version = parsed.get("version", version)
            cpu_isa = parsed.get("cpu_isa", cpu_isa)
        elif (
            parsed["kind"] == "exec"
            and parsed["engine"] == "cpu"
            and parsed["primitive"] in MATRIX_PRIMITIVES
            and parsed["src_type"] == "bf16"
        ):
            runs.append(parsed)
    record: Dict[str, Any] = {"version": version, "cpu_isa": cpu_isa}
    if not runs:
        reason = (
            "oneDNN ran no bf16 matmul or inner product (its verbose output has none)"
            if seen_any
            else "oneDNN printed no verbose line (a torch without oneDNN, or a build that ignores ONEDNN_VERBOSE)"
        )
        return {**record, "isa": None, "impl": None, "amx": None, "impls": [], "reason": reason}
    amx_runs = [run for run in runs if run["isa"] and "amx" in run["isa"]]
    chosen = (amx_runs or runs)[0]
    impls = sorted({run["impl"] for run in runs})
    return {
        **record,
        "isa": chosen["isa"],
        "impl": chosen["impl"],
        "amx": bool(amx_runs),
        "impls": impls,
        "reason": None,
    }


def amx_used(nodes: Mapping[str, Optional[Mapping[str, Any]]]) -> str:
    """The closing message's answer for a run's nodes (name -> :func:`matmul_kernels` record, or None when the
    node has none): ``yes``, ``no (avx512_core_bf16)``, ``partly (no on B: avx512_core_bf16)`` or
    ``unknown (...)``."""
    if not nodes:
        return "unknown (no oneDNN record: the smoke test did not run)"
    missing = sorted(name for name, record in nodes.items() if not record or record.get("amx") is None)
    if missing:
        return "unknown (no bf16 matmul in oneDNN's output on {})".format(", ".join(missing))

    def kernel(record: Mapping[str, Any]) -> str:
        return str(record.get("isa") or record.get("impl") or "?")

    without = {name: record for name, record in nodes.items() if record and not record.get("amx")}
    if not without:
        return "yes"
    if len(without) == len(nodes):
        return "no ({})".format(", ".join(sorted({kernel(record) for record in without.values()})))
    return "partly (no on {})".format(", ".join(f"{name}: {kernel(without[name])}" for name in sorted(without)))


def run_kernels(probes: Optional[Iterable[Mapping[str, Any]]], measured_in: Optional[str] = None) -> Dict[str, Any]:
    """run.json's ``amx``: per node the kernel of the bf16 matrix product the smoke test ran, and the answer.

    ``probes``: the smoke test's JSON lines of the ranks that ran the probe (one per node: ``host``, ``rank``, and
    ``onednn``, the verbose lines, or ``onednn_error``). ``measured_in`` names the run whose smoke test measured
    it (a skipped smoke test's record is an earlier run's). Returns ``{"used", "nodes", "measured_in"}``: ``used``
    is :func:`amx_used`'s answer, ``nodes`` host -> :func:`matmul_kernels`' record with ``rank`` and ``lines``."""
    nodes: Dict[str, Dict[str, Any]] = {}
    for probe in probes or []:
        if not isinstance(probe, Mapping):
            continue
        host = str(probe.get("host") or "rank {}".format(probe.get("rank")))
        if host in nodes:
            continue
        lines = [str(line) for line in probe.get("onednn") or []]
        record = matmul_kernels(lines)
        if probe.get("onednn_error"):
            record["reason"] = "the bf16 matmul failed: {}".format(probe["onednn_error"])
        nodes[host] = {**record, "rank": probe.get("rank"), "lines": lines}
    return {"used": amx_used(nodes), "nodes": nodes, "measured_in": measured_in}
