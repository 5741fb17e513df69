# SPDX-License-Identifier: Apache-2.0
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


def parse_lscpu_json(text: str) -> Dict[str, str]:
    """Parse `lscpu -J` (flat, or the tree that lscpu prints on a terminal) into {field: value}.

    Field names lose their trailing colon ("Socket(s)"); sections without a value ("Caches (sum of all)") are
    left out; children are flattened.
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
                fields.setdefault(_field_name(str(entry["field"])), str(data).strip())
            walk(entry.get("children") or [])

    walk(document["lscpu"])
    return fields


def parse_lscpu_text(text: str) -> Dict[str, str]:
    """Parse plain `lscpu` output ("Field:   value", indented or not) into {field: value}."""
    fields: Dict[str, str] = {}
    for line in text.splitlines():
        match = re.match(r"^\s*([^:]+):\s*(.*?)\s*$", line)
        if not match:
            continue
        name, value = match.group(1).strip(), match.group(2)
        if value:
            fields.setdefault(name, value)
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
    first = cpus[0]
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


def numa_nodes_from(
    lscpu: Optional[Mapping[str, str]],
    sysfs_cpulists: Optional[Mapping[int, str]],
    online_cpus: List[int],
) -> List[Dict[str, Any]]:
    """NUMA nodes with their CPUs, from lscpu, else sysfs cpulist texts, else one node holding every CPU."""
    nodes: Dict[int, List[int]] = {}
    for name, value in (lscpu or {}).items():
        match = re.fullmatch(r"NUMA node(\d+) CPU\(s\)", name)
        if match:
            nodes[int(match.group(1))] = parse_cpulist(value)
    if not nodes and sysfs_cpulists:
        nodes = {int(node): parse_cpulist(text.strip()) for node, text in sysfs_cpulists.items()}
    if not nodes:
        nodes = {0: list(online_cpus)}
    return [{"node": node, "cpus": nodes[node]} for node in sorted(nodes)]


def topology(
    cpus: List[Dict[str, str]],
    lscpu: Optional[Mapping[str, str]] = None,
    sysfs_numa: Optional[Mapping[int, str]] = None,
) -> Dict[str, Any]:
    """Sockets, cores and threads: lscpu's figures where it gives them, /proc/cpuinfo's otherwise.

    `logical_cpus` counts the online CPUs (what a training layout can use).
    """
    lscpu = lscpu or {}
    fallback = _cpuinfo_topology(cpus)
    online = [int(cpu["processor"]) for cpu in cpus]
    if lscpu.get("On-line CPU(s) list"):
        online = parse_cpulist(lscpu["On-line CPU(s) list"])
    logical = len(online)

    threads = _to_int(lscpu.get("Thread(s) per core")) or fallback["threads_per_core"] or 1
    sockets = _to_int(lscpu.get("Socket(s)")) or _to_int(lscpu.get("Cluster(s)")) or fallback["sockets"] or 1
    cores_per_socket = (
        _to_int(lscpu.get("Core(s) per socket"))
        or _to_int(lscpu.get("Core(s) per cluster"))
        or fallback["cores_per_socket"]
        or max(1, logical // (threads * sockets))
    )
    physical = sockets * cores_per_socket
    if not lscpu and fallback["physical"]:
        physical = fallback["physical"]
    return {
        "sockets": sockets,
        "cores_per_socket": cores_per_socket,
        "threads_per_core": threads,
        "physical_cores": physical,
        "logical_cpus": logical,
        "numa_nodes": numa_nodes_from(lscpu, sysfs_numa, online),
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
) -> Dict[str, Any]:
    """The `amx_cpu` facts of one node from its texts, its uname and a probe result."""
    cpus = parse_cpuinfo(cpuinfo_text)
    flag_set = cpu_flag_set(cpus, lscpu_fields)
    flags = flags_of_interest(flag_set)
    architecture = machine or (lscpu_fields or {}).get("Architecture", "")
    usable, reason = decide_amx(architecture, flags, kernel_release, probe)
    facts: Dict[str, Any] = {}
    facts.update(identity(cpus, lscpu_fields))
    facts["architecture"] = architecture
    facts["flags"] = flags
    facts.update(topology(cpus, lscpu_fields, sysfs_numa))
    facts.update(virtualization(flag_set, lscpu_fields))
    facts["kernel_release"] = kernel_release
    facts["kernel_version"] = list(parse_kernel_release(kernel_release))
    facts["amx_usable"] = usable
    facts["amx_reason"] = reason
    facts["amx_probe"] = probe.as_dict()
    facts["sources"] = list(sources or [])
    return facts
