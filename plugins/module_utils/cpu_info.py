# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""CPU facts for amx.cluster: parse /proc/cpuinfo and lscpu, probe AMX, decide whether a process can use it.

Everything here is plain computation on texts and values, except `LibcArchPrctl` (the real system call), which
`probe_amx` takes as an injectable argument so that the decision logic can be tested on any machine.
Runs on the target's Python (3.8+).
"""

from __future__ import annotations

import errno
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set, Tuple

# Flags reported as booleans: the AMX set plus the AVX-512 flavours that matter for bf16/int8 training.
FLAGS_OF_INTEREST: Tuple[str, ...] = (
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "amx_fp16",
    "avx512f",
    "avx512_bf16",
    "avx512_vnni",
    "avx512_fp16",
)
# What a Sapphire Rapids or later CPU must show for AMX to be there at all (amx_fp16 is Granite Rapids only).
AMX_REQUIRED_FLAGS: Tuple[str, ...] = ("amx_tile", "amx_bf16", "amx_int8")
# First mainline kernel that hands the AMX tile state to processes.
AMX_MIN_KERNEL: Tuple[int, int] = (5, 16)

# arch_prctl(2) codes (arch/x86/include/uapi/asm/prctl.h) and the tile data state component.
ARCH_GET_XCOMP_SUPP = 0x1021
ARCH_GET_XCOMP_PERM = 0x1022
ARCH_REQ_XCOMP_PERM = 0x1023
XFEATURE_XTILEDATA = 18
SYS_ARCH_PRCTL_X86_64 = 158

X86_64_NAMES = ("x86_64", "amd64")

# /proc/cpuinfo on arm64 gives no vendor or model name, only the implementer and part numbers.
ARM_IMPLEMENTERS: Dict[str, str] = {"0x41": "ARM", "0x61": "Apple", "0xc0": "Ampere"}
ARM_PARTS: Dict[Tuple[str, str], str] = {
    ("0x41", "0xd0c"): "Neoverse-N1",
    ("0x41", "0xd40"): "Neoverse-V1",
    ("0x41", "0xd49"): "Neoverse-N2",
    ("0x41", "0xd4f"): "Neoverse-V2",
    ("0xc0", "0xac3"): "Ampere-1",
}


class CpuInfoError(ValueError):
    """A text that cannot be parsed: the message says which text and why."""


# ---------------------------------------------------------------------------------------------------------------
# Small parsers
# ---------------------------------------------------------------------------------------------------------------


def parse_cpulist(text: Optional[str]) -> List[int]:
    """Parse a kernel CPU list ("0-15,32-47", "0,1", "" for a node without CPUs) into sorted ints."""
    cpus: Set[int] = set()
    if text is None:
        return []
    for part in re.sub(r"\s", "", text).split(","):
        if not part:
            continue
        # "N", "N-M", or the kernel's strided "N-M:used/group" (cpuset(7) 'List format').
        match = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+)/(\d+))?)?", part)
        if not match:
            raise CpuInfoError(f"cannot parse CPU list {text!r}: bad element {part!r}")
        start = int(match.group(1))
        end = int(match.group(2)) if match.group(2) is not None else start
        used = int(match.group(3)) if match.group(3) is not None else 1
        group = int(match.group(4)) if match.group(4) is not None else 1
        if end < start or group < 1 or used > group:
            raise CpuInfoError(f"cannot parse CPU list {text!r}: bad range {part!r}")
        for base in range(start, end + 1, group):
            cpus.update(range(base, min(base + used, end + 1)))
    return sorted(cpus)


def parse_kernel_release(release: str) -> Tuple[int, ...]:
    """'5.15.0-1028-aws' -> (5, 15, 0); '6.8' -> (6, 8, 0); an unparseable release -> ()."""
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", release.strip())
    if not match:
        return ()
    return (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))


def _to_int(value: Optional[str]) -> Optional[int]:
    if value is None:
        return None
    value = value.strip()
    return int(value) if value.isdigit() else None


# ---------------------------------------------------------------------------------------------------------------
# /proc/cpuinfo and lscpu
# ---------------------------------------------------------------------------------------------------------------


def parse_cpuinfo(text: str) -> List[Dict[str, str]]:
    """Split /proc/cpuinfo into one dict per logical CPU (blocks that start with 'processor')."""
    blocks: List[Dict[str, str]] = []
    current: Dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        if ":" not in line:
            continue
        key, _sep, value = line.partition(":")
        current[key.strip()] = value.strip()
    if current:
        blocks.append(current)
    cpus = [block for block in blocks if "processor" in block and _to_int(block["processor"]) is not None]
    if not cpus:
        raise CpuInfoError("/proc/cpuinfo has no 'processor' entries")
    return cpus


def _field_name(field: str) -> str:
    return field.strip().rstrip(":").strip()


def _record(fields: Dict[str, str], name: str, value: str) -> str:
    """Keep the first value of a field under its name, and the Nth repetition as "name #N".

    A CPU with several core types (hybrid Intel, Arm big.LITTLE) gets one section per type from util-linux
    2.38 and later, each starting with its own "Model name" and carrying its own "Core(s) per socket".
    """
    key = name
    number = 2
    while key in fields:
        key = f"{name} #{number}"
        number += 1
    fields[key] = value
    return key


def parse_lscpu_json(text: str) -> Dict[str, str]:
    """Parse `lscpu -J` (flat, or the tree that lscpu prints on a terminal) into {field: value}.

    Field names lose their trailing colon ("Socket(s)"); sections without a value ("Caches (sum of all)") are
    left out; children are flattened; a repeated field (one per core type) is kept as "field #2", "#3"...
    """
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise CpuInfoError(f"lscpu -J printed invalid JSON: {exc}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("lscpu"), list):
        raise CpuInfoError("lscpu -J printed JSON without an 'lscpu' list")
    fields: Dict[str, str] = {}

    def walk(entries: Iterable[Any]) -> None:
        for entry in entries:
            if not isinstance(entry, dict) or "field" not in entry:
                raise CpuInfoError(f"lscpu -J entry without 'field': {entry!r}")
            data = entry.get("data")
            if data is not None:
                _record(fields, _field_name(str(entry["field"])), str(data).strip())
            walk(entry.get("children") or [])

    walk(document["lscpu"])
    return fields


def parse_lscpu_text(text: str) -> Dict[str, str]:
    """Parse plain `lscpu` output ("Field:   value", indented or not) into {field: value}.

    A repeated field (one section per core type) is kept as "field #2", "#3"..., as `parse_lscpu_json` does.
    A value that lscpu wrapped (a long "Flags" line cut at a fixed width, even inside a word) is joined back
    from its continuation lines, which start at the value's column. An empty NUMA node line (a node without
    CPUs) is kept with an empty value, as the JSON has it.
    """
    fields: Dict[str, str] = {}
    last_key: Optional[str] = None
    last_raw, last_column = "", 0
    for line in text.splitlines():
        match = re.match(r"^\s*([^:]+):[ \t]*(.*)$", line)
        if not match and last_key is not None and len(line) > last_column and not line[:last_column].strip():
            last_raw += line[last_column:]
            fields[last_key] = last_raw.strip()
            continue
        last_key = None
        if not match:
            continue
        name, value = match.group(1).strip(), match.group(2).strip()
        if value or re.fullmatch(r"NUMA node\d+ CPU\(s\)", name):
            last_key = _record(fields, name, value)
            last_raw, last_column = match.group(2), match.start(2)
    if "Architecture" not in fields and "CPU(s)" not in fields:
        raise CpuInfoError("lscpu printed no 'Field: value' lines with 'Architecture' or 'CPU(s)'")
    return fields


def cpu_flag_set(cpus: List[Dict[str, str]], lscpu: Optional[Mapping[str, str]] = None) -> Set[str]:
    """The CPU flags: x86 'flags', arm64 'Features' of the first CPU, else lscpu 'Flags'."""
    first = cpus[0] if cpus else {}
    text = first.get("flags") or first.get("Features")
    if text is None and lscpu:
        text = lscpu.get("Flags")
    return set((text or "").split())


def flags_of_interest(flag_set: Set[str]) -> Dict[str, bool]:
    return {name: name in flag_set for name in FLAGS_OF_INTEREST}


# ---------------------------------------------------------------------------------------------------------------
# Topology
# ---------------------------------------------------------------------------------------------------------------


def _cpuinfo_topology(cpus: List[Dict[str, str]]) -> Dict[str, Optional[int]]:
    logical = len(cpus)
    packages = {cpu["physical id"] for cpu in cpus if "physical id" in cpu}
    cores = {(cpu.get("physical id"), cpu["core id"]) for cpu in cpus if "core id" in cpu}
    first = cpus[0] if cpus else {}
    cores_per_socket = _to_int(first.get("cpu cores"))
    siblings = _to_int(first.get("siblings"))
    if packages and cores:
        sockets: Optional[int] = len(packages)
        physical: Optional[int] = len(cores)
        threads: Optional[int] = logical // physical if physical else None
        if cores_per_socket is None:
            cores_per_socket = physical // len(packages)
        if siblings and cores_per_socket:
            threads = siblings // cores_per_socket
    else:
        # arm64 and friends: cpuinfo says nothing about packages or SMT.
        sockets, physical, threads = None, None, None
    return {
        "logical": logical,
        "sockets": sockets,
        "cores_per_socket": cores_per_socket,
        "threads_per_core": threads,
        "physical": physical,
    }


def lscpu_core_sections(lscpu: Mapping[str, str]) -> List[Dict[str, Optional[int]]]:
    """One entry per lscpu section (one per core type): its cores per unit, units and threads per core.

    A unit is a socket, or on arm64 (where lscpu prints "Socket(s): -") a cluster: a cluster is a group of
    cores, not a socket, so it counts cores but never sockets.
    """
    count = 1
    for name in lscpu:
        match = re.fullmatch(r"(?:Core\(s\) per (?:socket|cluster)|Model name) #(\d+)", name)
        if match:
            count = max(count, int(match.group(1)))
    sections = []
    for number in range(1, count + 1):
        suffix = "" if number == 1 else f" #{number}"
        sections.append(
            {
                "cores": _to_int(lscpu.get("Core(s) per socket" + suffix))
                or _to_int(lscpu.get("Core(s) per cluster" + suffix)),
                "sockets": _to_int(lscpu.get("Socket(s)" + suffix)),
                "clusters": _to_int(lscpu.get("Cluster(s)" + suffix)),
                "threads": _to_int(lscpu.get("Thread(s) per core" + suffix)),
            }
        )
    return sections


def parse_lscpu_parseable(text: str) -> List[Dict[str, Optional[int]]]:
    """Parse `lscpu -p=CPU,CORE,SOCKET,NODE` into rows {cpu, core, socket, node} (None for an empty field).

    Comment lines start with '#'; the last one names the columns ("# CPU,Core,Socket,Node"). NODE is empty on
    machines without NUMA, SOCKET on arm64 machines that do not know their sockets.
    """
    columns = ["cpu", "core", "socket", "node"]
    rows: List[Dict[str, Optional[int]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            names = [name.strip().lower() for name in line.lstrip("#").split(",")]
            if len(names) > 1 and all(re.fullmatch(r"[a-z]+", name) for name in names):
                columns = names
            continue
        values = [value.strip() for value in line.split(",")]
        if len(values) != len(columns):
            raise CpuInfoError(f"lscpu -p line {number} has {len(values)} fields, expected {len(columns)}")
        row: Dict[str, Optional[int]] = {}
        for name, value in zip(columns, values):
            if value in ("", "-"):
                row[name] = None
            elif value.isdigit():
                row[name] = int(value)
            else:
                raise CpuInfoError(f"lscpu -p line {number}: {name.upper()} is not a number")
        if row.get("cpu") is None:
            raise CpuInfoError(f"lscpu -p line {number} has no CPU number")
        rows.append(row)
    if not rows:
        raise CpuInfoError("lscpu -p printed no CPU lines")
    return rows


def numa_nodes_from(
    lscpu: Optional[Mapping[str, str]],
    sysfs_cpulists: Optional[Mapping[int, str]],
    online_cpus: List[int],
    warnings: Optional[List[str]] = None,
) -> List[Dict[str, Any]]:
    """NUMA nodes with their CPUs, from lscpu, else sysfs cpulist texts, else one node holding every CPU.

    A source with a list that does not parse is dropped whole for the next one, and `warnings` says so.
    """
    warnings = warnings if warnings is not None else []
    nodes: Dict[int, List[int]] = {}
    try:
        for name, value in (lscpu or {}).items():
            match = re.fullmatch(r"NUMA node(\d+) CPU\(s\)", name)
            if match:
                nodes[int(match.group(1))] = parse_cpulist(value)
    except CpuInfoError as exc:
        warnings.append(f"lscpu's NUMA lists were not used: {exc}")
        nodes = {}
    if not nodes and sysfs_cpulists:
        try:
            nodes = {int(node): parse_cpulist(text.strip()) for node, text in sysfs_cpulists.items()}
        except CpuInfoError as exc:
            warnings.append(f"the sysfs NUMA lists were not used: {exc}; one node holds every CPU")
            nodes = {}
    if not nodes:
        nodes = {0: list(online_cpus)}
    return [{"node": node, "cpus": nodes[node]} for node in sorted(nodes)]


def _cpu_map_from_cpuinfo(cpus: List[Dict[str, str]]) -> Optional[Dict[int, Tuple[int, int]]]:
    """{cpu: (socket, core)} from 'processor', 'physical id' and 'core id'; None when one is missing."""
    if not cpus:
        return None
    mapping: Dict[int, Tuple[int, int]] = {}
    for cpu in cpus:
        number, socket, core = (_to_int(cpu.get(key)) for key in ("processor", "physical id", "core id"))
        if number is None or socket is None or core is None:
            return None
        mapping[number] = (socket, core)
    return mapping


def socket_cores_from(
    parseable: Optional[List[Dict[str, Optional[int]]]],
    cpus: List[Dict[str, str]],
    allowed: List[int],
    numa_nodes: List[Dict[str, Any]],
    warnings: List[str],
) -> List[Dict[str, Any]]:
    """Per socket: its NUMA nodes and the first allowed logical CPU of each physical core it has.

    Source: `lscpu -p` rows, else /proc/cpuinfo's physical id / core id, else one socket holding every
    allowed CPU (each counted as a core, `warnings` says so).
    """
    node_of = {cpu: node["node"] for node in numa_nodes for cpu in node["cpus"]}
    mapping: Optional[Dict[int, Tuple[int, int]]] = None
    if parseable:
        if all(row.get("socket") is not None and row.get("core") is not None for row in parseable):
            mapping = {}
            for row in parseable:
                cpu = int(row["cpu"])  # type: ignore[arg-type]
                mapping[cpu] = (int(row["socket"]), int(row["core"]))  # type: ignore[arg-type]
                if row.get("node") is not None:
                    node_of[cpu] = int(row["node"])  # type: ignore[arg-type]
        else:
            warnings.append("lscpu -p gave no socket or core for some CPUs: socket_cores come from /proc/cpuinfo")
    if mapping is None:
        mapping = _cpu_map_from_cpuinfo(cpus)
    if mapping is None:
        warnings.append(
            "no per-CPU socket and core numbers (lscpu -p, /proc/cpuinfo physical id / core id): socket_cores "
            "holds one socket with every allowed CPU, each counted as a core (a socket-mode layout refuses it)"
        )
        return [
            {
                "socket": 0,
                "numa_nodes": sorted({node["node"] for node in numa_nodes if node["cpus"]}),
                "cores": sorted(allowed),
            }
        ]
    allowed_set = set(allowed)
    sockets: Dict[int, Dict[str, Any]] = {}
    first_allowed: Dict[Tuple[int, int], int] = {}
    for cpu in sorted(mapping):
        socket, core = mapping[cpu]
        entry = sockets.setdefault(socket, {"socket": socket, "numa_nodes": set(), "cores": []})
        if cpu in node_of:
            entry["numa_nodes"].add(node_of[cpu])
        if cpu in allowed_set and (socket, core) not in first_allowed:
            first_allowed[(socket, core)] = cpu
    for (socket, _core), cpu in first_allowed.items():
        sockets[socket]["cores"].append(cpu)
    return [
        {
            "socket": socket,
            "numa_nodes": sorted(sockets[socket]["numa_nodes"]),
            "cores": sorted(sockets[socket]["cores"]),
        }
        for socket in sorted(sockets)
    ]


def topology(
    cpus: List[Dict[str, str]],
    lscpu: Optional[Mapping[str, str]] = None,
    sysfs_numa: Optional[Mapping[int, str]] = None,
    lscpu_parseable: Optional[str] = None,
    allowed_cpus: Optional[Any] = None,
    warnings: Optional[List[str]] = None,
) -> Dict[str, Any]:
    """Sockets, cores and threads: lscpu's figures where it gives them, /proc/cpuinfo's otherwise.

    `logical_cpus` counts the online CPUs (what a training layout can use). The host figures stay the host's;
    `allowed_cpus` (a list of ints, or a kernel CPU list text such as /proc/self/status's Cpus_allowed_list;
    default: every online CPU) narrows `socket_cores` and `usable_physical_cores` to what this process may
    use. A text that does not parse falls back to the next source, with a line in `warnings`.
    """
    warnings = warnings if warnings is not None else []
    lscpu = lscpu or {}
    fallback = _cpuinfo_topology(cpus)
    online = [int(cpu["processor"]) for cpu in cpus]
    if lscpu.get("On-line CPU(s) list"):
        try:
            online = parse_cpulist(lscpu["On-line CPU(s) list"])
        except CpuInfoError as exc:
            warnings.append(f"lscpu's on-line CPU list was not used: {exc}; the CPUs of /proc/cpuinfo are")
    logical = len(online)

    parseable: Optional[List[Dict[str, Optional[int]]]] = None
    if lscpu_parseable is not None:
        try:
            parseable = parse_lscpu_parseable(lscpu_parseable)
        except CpuInfoError as exc:
            warnings.append(f"lscpu -p was not used: {exc}; socket_cores come from /proc/cpuinfo")

    sections = lscpu_core_sections(lscpu) if lscpu else []
    section_threads = [section["threads"] for section in sections if section["threads"]]
    threads = max(section_threads) if section_threads else (fallback["threads_per_core"] or 1)
    section_sockets = [section["sockets"] for section in sections if section["sockets"]]
    per_cpu_sockets = {row["socket"] for row in parseable or [] if row.get("socket") is not None}
    sockets = max(section_sockets) if section_sockets else (len(per_cpu_sockets) or fallback["sockets"] or 1)
    # Every section's cores: a socket's count, or a cluster's count times the clusters.
    counted = [
        section["cores"] * (section["sockets"] or section["clusters"] or 1) for section in sections if section["cores"]
    ]
    if len(counted) == 1 and sections[0]["cores"] and sections[0]["sockets"]:
        cores_per_socket = sections[0]["cores"]
        physical = sockets * cores_per_socket
    elif counted:
        physical = sum(counted)
        cores_per_socket = max(1, physical // sockets)
    else:
        cores_per_socket = fallback["cores_per_socket"] or max(1, logical // (threads * sockets))
        physical = sockets * cores_per_socket
        if fallback["physical"]:
            physical = fallback["physical"]

    if allowed_cpus is None:
        allowed = list(online)
    elif isinstance(allowed_cpus, str):
        try:
            allowed = parse_cpulist(allowed_cpus)
        except CpuInfoError as exc:
            warnings.append(f"the allowed CPU list was not used: {exc}; every online CPU counts as allowed")
            allowed = list(online)
    else:
        allowed = sorted({int(cpu) for cpu in allowed_cpus})
    numa = numa_nodes_from(lscpu, sysfs_numa, online, warnings)
    socket_cores = socket_cores_from(parseable, cpus, allowed, numa, warnings)
    return {
        "sockets": sockets,
        "cores_per_socket": cores_per_socket,
        "threads_per_core": threads,
        "physical_cores": physical,
        "logical_cpus": logical,
        "numa_nodes": numa,
        "allowed_cpus": allowed,
        "usable_physical_cores": sum(len(socket["cores"]) for socket in socket_cores),
        "socket_cores": socket_cores,
    }


def identity(cpus: List[Dict[str, str]], lscpu: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """Vendor and model name, from lscpu, else /proc/cpuinfo (with the arm64 implementer/part tables)."""
    lscpu = lscpu or {}
    first = cpus[0] if cpus else {}
    implementer = first.get("CPU implementer", "").lower()
    part = first.get("CPU part", "").lower()
    vendor = lscpu.get("Vendor ID") or first.get("vendor_id") or ARM_IMPLEMENTERS.get(implementer, implementer)
    model = lscpu.get("Model name") or first.get("model name") or ARM_PARTS.get((implementer, part), "")
    if not model and part:
        model = f"CPU part {part}"
    return {"vendor": vendor or "", "model_name": model}


def virtualization(flag_set: Set[str], lscpu: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """Hypervisor vendor from lscpu; the x86 'hypervisor' flag alone says 'virtualized, vendor unknown'."""
    vendor = (lscpu or {}).get("Hypervisor vendor", "")
    if vendor:
        return {"virtualized": True, "hypervisor": vendor}
    if "hypervisor" in flag_set:
        return {"virtualized": True, "hypervisor": "unknown"}
    return {"virtualized": False, "hypervisor": ""}


# ---------------------------------------------------------------------------------------------------------------
# The AMX probe and the decision
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class ProbeResult:
    """What the arch_prctl probe saw. `ran` is False when it could not run; `detail` then says why."""

    ran: bool
    detail: str = ""
    supported_mask: Optional[int] = None
    tile_data_supported: Optional[bool] = None
    permission_granted: Optional[bool] = None
    error_number: Optional[int] = None

    def as_dict(self) -> Dict[str, Any]:
        return {
            "ran": self.ran,
            "detail": self.detail,
            "supported_mask": self.supported_mask,
            "tile_data_supported": self.tile_data_supported,
            "permission_granted": self.permission_granted,
            "errno": self.error_number,
            "errno_name": errno.errorcode.get(self.error_number, "") if self.error_number else "",
        }


class LibcArchPrctl:
    """The real arch_prctl(2) through libc's syscall(), x86_64 only. Methods raise OSError(errno)."""

    def __init__(self) -> None:
        import ctypes  # standard library, but keep it out of import time for the parsers

        self._ctypes = ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        self._syscall = libc.syscall
        self._syscall.restype = ctypes.c_long

    def _call(self, code: int, arg: Any) -> None:
        ctypes = self._ctypes
        ctypes.set_errno(0)
        result = self._syscall(ctypes.c_long(SYS_ARCH_PRCTL_X86_64), ctypes.c_long(code), arg)
        if result != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))

    def get_xcomp_supp(self) -> int:
        mask = self._ctypes.c_ulong(0)
        self._call(ARCH_GET_XCOMP_SUPP, self._ctypes.byref(mask))
        return int(mask.value)

    def req_xcomp_perm(self, feature: int) -> None:
        self._call(ARCH_REQ_XCOMP_PERM, self._ctypes.c_ulong(feature))


def probe_amx(machine: str, arch_prctl: Any = None) -> ProbeResult:
    """Ask the kernel for the AMX tile state for this process, as a training process would.

    `arch_prctl` is any object with `get_xcomp_supp() -> int` and `req_xcomp_perm(feature)` that raise OSError
    (default: `LibcArchPrctl`). The permission lasts for this process only: nothing on the host changes.
    """
    if machine not in X86_64_NAMES:
        return ProbeResult(ran=False, detail=f"the probe is for x86_64 only, this is {machine}")
    if arch_prctl is None:
        try:
            arch_prctl = LibcArchPrctl()
        except (OSError, AttributeError, ImportError) as exc:
            return ProbeResult(ran=False, detail=f"cannot call arch_prctl through libc: {exc}")
    result = ProbeResult(ran=True)
    try:
        result.supported_mask = arch_prctl.get_xcomp_supp()
        result.tile_data_supported = bool(result.supported_mask & (1 << XFEATURE_XTILEDATA))
    except OSError as exc:
        # Kernels before 5.16 do not know the code: EINVAL. Leave 'unknown' and still ask below.
        result.detail = f"ARCH_GET_XCOMP_SUPP failed: errno {exc.errno} ({errno.errorcode.get(exc.errno or 0, '?')})"
    try:
        arch_prctl.req_xcomp_perm(XFEATURE_XTILEDATA)
        result.permission_granted = True
    except OSError as exc:
        result.permission_granted = False
        result.error_number = exc.errno
    return result


def _errno_text(number: Optional[int]) -> str:
    if not number:
        return "no errno"
    return f"errno {number} ({errno.errorcode.get(number, '?')}: {os.strerror(number)})"


def decide_amx(
    machine: str,
    flags: Mapping[str, bool],
    kernel_release: str,
    probe: ProbeResult,
) -> Tuple[bool, str]:
    """Whether a process on this node can use AMX, and if not, why (empty reason when usable).

    Order: architecture, then the CPU flags (what the CPU and hypervisor expose), then the probe. The kernel
    version alone never decides: vendor kernels older than 5.16 may carry the AMX patches, so a successful probe
    wins; an old kernel is named in the reason when the probe fails or cannot run.
    """
    if machine not in X86_64_NAMES:
        return False, (
            f"not x86_64: the architecture is {machine}, and AMX exists only on Intel x86_64 CPUs "
            "(Sapphire Rapids or later)"
        )
    version = parse_kernel_release(kernel_release)
    old_kernel = bool(version) and version[:2] < AMX_MIN_KERNEL
    kernel_note = f"kernel {kernel_release} is older than 5.16, the first kernel with AMX support"

    missing = [name for name in AMX_REQUIRED_FLAGS if not flags.get(name)]
    if missing:
        reason = (
            f"no AMX flags in /proc/cpuinfo (missing: {', '.join(missing)}): "
            "the CPU or its hypervisor does not expose AMX"
        )
        return False, reason + (f"; also, {kernel_note}" if old_kernel else "")

    if not probe.ran:
        reason = f"probe unavailable ({probe.detail or 'not run'}): the AMX flags are present but usability is unproven"
        return False, reason + (f"; {kernel_note}" if old_kernel else "")

    if probe.permission_granted:
        return True, ""

    parts = []
    if old_kernel:
        parts.append(kernel_note)
    if probe.tile_data_supported is False:
        parts.append("the kernel does not offer the AMX tile data state (ARCH_GET_XCOMP_SUPP lacks bit 18)")
    refused = _errno_text(probe.error_number)
    parts.append(f"permission refused by the kernel: arch_prctl(ARCH_REQ_XCOMP_PERM, 18) failed with {refused}")
    return False, "; ".join(parts)


# ---------------------------------------------------------------------------------------------------------------
# Everything together
# ---------------------------------------------------------------------------------------------------------------


def gather_cpu_facts(
    cpuinfo_text: str,
    lscpu_fields: Optional[Mapping[str, str]],
    machine: str,
    kernel_release: str,
    probe: ProbeResult,
    sysfs_numa: Optional[Mapping[int, str]] = None,
    sources: Optional[List[str]] = None,
    lscpu_parseable: Optional[str] = None,
    allowed_cpus: Optional[Any] = None,
) -> Dict[str, Any]:
    """The `amx_cpu` facts of one node from its texts, its uname and a probe result.

    `lscpu_parseable` is the text of `lscpu -p=CPU,CORE,SOCKET,NODE`; `allowed_cpus` what the process may use
    (see `topology`). `warnings` lists every text that was set aside for a fallback.
    """
    warnings: List[str] = []
    cpus = parse_cpuinfo(cpuinfo_text)
    flag_set = cpu_flag_set(cpus, lscpu_fields)
    flags = flags_of_interest(flag_set)
    architecture = machine or (lscpu_fields or {}).get("Architecture", "")
    usable, reason = decide_amx(architecture, flags, kernel_release, probe)
    facts: Dict[str, Any] = {}
    facts.update(identity(cpus, lscpu_fields))
    facts["architecture"] = architecture
    facts["flags"] = flags
    facts.update(topology(cpus, lscpu_fields, sysfs_numa, lscpu_parseable, allowed_cpus, warnings))
    facts.update(virtualization(flag_set, lscpu_fields))
    facts["kernel_release"] = kernel_release
    facts["kernel_version"] = list(parse_kernel_release(kernel_release))
    facts["amx_usable"] = usable
    facts["amx_reason"] = reason
    facts["amx_probe"] = probe.as_dict()
    facts["sources"] = list(sources or [])
    facts["warnings"] = warnings
    return facts
