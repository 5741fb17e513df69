#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cpu_facts
short_description: CPU, topology, kernel and AMX facts of a node
version_added: 0.1.0
description:
  - Reads C(/proc/cpuinfo), C(lscpu) (its JSON output where C(lscpu -J) works, its plain output otherwise,
    nothing when C(lscpu) is missing) and the kernel release, and returns the node's CPU vendor and model, the
    CPU flags that matter for bf16/int8 training, the socket/core/thread topology, the NUMA nodes with their
    CPUs, the hypervisor (or bare metal) and whether a process can use Intel AMX.
  - Whether AMX is usable is decided by a real probe. The module asks the kernel for the AMX tile data state with
    C(arch_prctl(ARCH_REQ_XCOMP_PERM, 18)) through ctypes, as a training process would. The CPU flags, the
    architecture and the kernel version only explain a failure; the probe decides when it can run, because some
    vendor kernels older than 5.16 carry the AMX patches.
  - Read-only. The permission the probe obtains belongs to the module's own short-lived process; nothing on the
    node changes.
  - The facts are returned as C(ansible_facts.amx_cpu) and also as C(amx_cpu) in the result.
author:
  - amx.cluster developers (@amx-cluster)
options:
  probe:
    description:
      - Run the C(arch_prctl) probe on x86_64 nodes.
      - When false, or when the probe cannot run, C(amx_usable) is false and C(amx_reason) says that usability
        is unproven.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: The module only reads; it returns the same facts in check mode.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to show.
  facts:
    support: full
    description: Returns C(ansible_facts.amx_cpu).
notes:
  - Runs C(lscpu) with C(LC_ALL=C) so that field names are not translated, and C(lscpu -p=CPU,CORE,SOCKET,NODE)
    for the socket and core of every online CPU.
  - The host figures (C(sockets), C(physical_cores), C(logical_cpus), C(numa_nodes)) are the machine's. Inside
    a CPU-limited container or under C(taskset), C(allowed_cpus), C(usable_physical_cores) and C(socket_cores)
    say what the process may use (C(os.sched_getaffinity), else C(Cpus_allowed_list) of C(/proc/self/status)).
  - A text that does not parse (a CPU list, a NUMA line, an C(lscpu -p) line) is set aside for the next source
    and named in C(warnings); the module fails only when C(/proc/cpuinfo) itself cannot be read or parsed.
  - On arm64 and other non-x86_64 nodes the flags are all false and the probe does not run.
seealso:
  - name: arch_prctl(2)
    description: The system call the probe uses (ARCH_GET_XCOMP_SUPP, ARCH_REQ_XCOMP_PERM).
    link: https://man7.org/linux/man-pages/man2/arch_prctl.2.html
"""

EXAMPLES = r"""
- name: Gather CPU and AMX facts
  amx.cluster.cpu_facts:

- name: Show whether AMX is usable and why not
  ansible.builtin.debug:
    msg: "{{ ansible_facts.amx_cpu.amx_usable }} {{ ansible_facts.amx_cpu.amx_reason }}"

- name: Gather the facts without the arch_prctl probe (AMX is then reported as unproven)
  amx.cluster.cpu_facts:
    probe: false
  register: cpu

- name: Use the physical core count
  ansible.builtin.debug:
    msg: "{{ cpu.amx_cpu.physical_cores }} physical cores on {{ cpu.amx_cpu.sockets }} sockets"
"""

RETURN = r"""
amx_cpu:
  description: The CPU facts; the same dict is set as C(ansible_facts.amx_cpu).
  returned: always
  type: dict
  contains:
    vendor:
      description: CPU vendor as lscpu or /proc/cpuinfo names it.
      type: str
      sample: GenuineIntel
    model_name:
      description: CPU model name.
      type: str
      sample: Intel(R) Xeon(R) Gold 6455B
    architecture:
      description: Machine architecture from uname.
      type: str
      sample: x86_64
    flags:
      description:
        - One boolean per CPU flag that matters for AMX and AVX-512 training, true when /proc/cpuinfo lists it.
        - Keys are amx_tile, amx_bf16, amx_int8, amx_fp16, avx512f, avx512_bf16, avx512_vnni and avx512_fp16.
      type: dict
      sample: {"amx_tile": true, "amx_bf16": true, "amx_int8": true, "amx_fp16": false, "avx512f": true,
               "avx512_bf16": true, "avx512_vnni": true, "avx512_fp16": true}
    sockets:
      description: Number of CPU sockets (packages).
      type: int
      sample: 2
    cores_per_socket:
      description: Physical cores per socket (of every core type together on a hybrid CPU).
      type: int
      sample: 16
    threads_per_core:
      description:
        - Hardware threads per physical core (2 with hyper-threading); on a hybrid CPU, the most any core type has.
      type: int
      sample: 2
    physical_cores:
      description:
        - Physical cores on the node (sockets times cores per socket; on a CPU with several core types, the
          cores of every type).
      type: int
      sample: 32
    logical_cpus:
      description: Online logical CPUs.
      type: int
      sample: 64
    numa_nodes:
      description: NUMA nodes, each with its number and its CPUs as a sorted list of ints.
      type: list
      elements: dict
      sample: [{"node": 0, "cpus": [0, 1, 2, 3]}, {"node": 1, "cpus": [4, 5, 6, 7]}]
    allowed_cpus:
      description:
        - The logical CPUs this process may use, sorted (its affinity, which a cpuset or C(taskset) narrows); every
          online CPU when the affinity cannot be read.
      type: list
      elements: int
      sample: [0, 1, 2, 3, 4, 5, 6, 7]
    usable_physical_cores:
      description: Physical cores with at least one allowed CPU (the sum of the C(socket_cores) lists).
      type: int
      sample: 4
    socket_cores:
      description:
        - One entry per socket, sorted by socket id, with the NUMA nodes whose CPUs are on it and, for each
          physical core on it with at least one allowed CPU, the lowest allowed logical CPU of that core.
        - "Source: C(lscpu -p=CPU,CORE,SOCKET,NODE), else the physical id / core id of C(/proc/cpuinfo), else one
          socket 0 with every allowed CPU counted as a core (C(warnings) says so)."
      type: list
      elements: dict
      contains:
        socket:
          description: The socket (package) id.
          type: int
        numa_nodes:
          description: The NUMA node ids whose CPUs are on this socket, sorted.
          type: list
          elements: int
        cores:
          description: The first allowed logical CPU of each usable physical core on this socket, sorted.
          type: list
          elements: int
      sample: [{"socket": 0, "numa_nodes": [0], "cores": [0, 1, 2, 3]}, {"socket": 1, "numa_nodes": [1],
               "cores": [4, 5, 6, 7]}]
    virtualized:
      description: True when lscpu names a hypervisor or the CPU flags include C(hypervisor).
      type: bool
      sample: false
    hypervisor:
      description: Hypervisor vendor from lscpu (C(unknown) when only the flag says so); empty on bare metal.
      type: str
      sample: KVM
    kernel_release:
      description: Kernel release string.
      type: str
      sample: 5.15.0-1028-aws
    kernel_version:
      description: The kernel release parsed into major, minor, patch; empty when it cannot be parsed.
      type: list
      elements: int
      sample: [5, 15, 0]
    amx_usable:
      description: True when the probe obtained the AMX tile data state for a process.
      type: bool
      sample: true
    amx_reason:
      description:
        - Why AMX is not usable (architecture, missing flags, old kernel, errno of the refused request, probe
          unavailable); empty when it is usable.
      type: str
      sample: "no AMX flags in /proc/cpuinfo (missing: amx_tile, amx_bf16, amx_int8): the CPU or its hypervisor
        does not expose AMX"
    amx_probe:
      description: What the arch_prctl probe saw.
      type: dict
      contains:
        ran:
          description: Whether the probe ran.
          type: bool
        detail:
          description: Why it did not run, or what failed on the way.
          type: str
        supported_mask:
          description: The ARCH_GET_XCOMP_SUPP state-component bitmap, null when unknown.
          type: int
        tile_data_supported:
          description: Whether bit 18 (tile data) is in that bitmap, null when unknown.
          type: bool
        permission_granted:
          description: Whether ARCH_REQ_XCOMP_PERM for tile data succeeded, null when not asked.
          type: bool
        errno:
          description: The errno of a refused request, null otherwise.
          type: int
        errno_name:
          description: The symbolic name of that errno (for example C(EINVAL)), empty otherwise.
          type: str
    sources:
      description: What the facts were read from.
      type: list
      elements: str
      sample: ["/proc/cpuinfo", "lscpu -J", "lscpu -p", "uname"]
    warnings:
      description:
        - The texts that did not parse and the fallback taken for each (for example a malformed C(lscpu -p) line,
          then C(/proc/cpuinfo)); empty when every source was used. Each is also an Ansible warning.
      type: list
      elements: str
      sample: []
"""

# Ansible modules import after their documentation (validate-modules checks it), hence the E402 waivers.
import glob
import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.amx.cluster.plugins.module_utils.cpu_info import (
    CpuInfoError,
    ProbeResult,
    gather_cpu_facts,
    parse_lscpu_json,
    parse_lscpu_text,
    probe_amx,
)

CPUINFO = "/proc/cpuinfo"
SYSFS_NODES = "/sys/devices/system/node"
PROC_STATUS = "/proc/self/status"
C_LOCALE = {"LC_ALL": "C", "LANG": "C", "LANGUAGE": "C"}


def read_lscpu(module):
    """Return (fields, source): lscpu -J, else plain lscpu, else (None, None) when lscpu is missing or fails."""
    lscpu = module.get_bin_path("lscpu")
    if not lscpu:
        return None, None
    rc, out, _err = module.run_command([lscpu, "-J"], environ_update=C_LOCALE)
    if rc == 0:
        try:
            return parse_lscpu_json(out), "lscpu -J"
        except CpuInfoError:
            pass
    rc, out, _err = module.run_command([lscpu], environ_update=C_LOCALE)
    if rc == 0:
        try:
            return parse_lscpu_text(out), "lscpu"
        except CpuInfoError:
            pass
    return None, None


def read_lscpu_parseable(module):
    """The text of `lscpu -p=CPU,CORE,SOCKET,NODE` (one line per online CPU), None when it does not run."""
    lscpu = module.get_bin_path("lscpu")
    if not lscpu:
        return None
    rc, out, _err = module.run_command([lscpu, "-p=CPU,CORE,SOCKET,NODE"], environ_update=C_LOCALE)
    return out if rc == 0 else None


def read_allowed_cpus():
    """The CPUs this process may use (cpuset, taskset): sched_getaffinity, else Cpus_allowed_list, else None."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is not None:
        try:
            return sorted(getaffinity(0))
        except OSError:
            pass
    try:
        with open(PROC_STATUS) as handle:
            for line in handle:
                if line.startswith("Cpus_allowed_list:"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def read_sysfs_numa():
    """{node: cpulist text} from /sys/devices/system/node/node*/cpulist; empty where sysfs has no nodes."""
    nodes = {}
    for path in glob.glob(os.path.join(SYSFS_NODES, "node[0-9]*", "cpulist")):
        match = re.search(r"node(\d+)", os.path.dirname(path))
        try:
            with open(path) as handle:
                nodes[int(match.group(1))] = handle.read()
        except (OSError, AttributeError):
            continue
    return nodes


def main():
    module = AnsibleModule(
        argument_spec=dict(probe=dict(type="bool", default=True)),
        supports_check_mode=True,
    )
    try:
        with open(CPUINFO) as handle:
            cpuinfo = handle.read()
    except OSError as exc:
        module.fail_json(msg=f"cannot read {CPUINFO} on this host: {exc}; cpu_facts needs a Linux node with /proc")

    sources = [CPUINFO]
    lscpu_fields, lscpu_source = read_lscpu(module)
    if lscpu_source:
        sources.append(lscpu_source)
    lscpu_parseable = read_lscpu_parseable(module)
    if lscpu_parseable is not None:
        sources.append("lscpu -p")
    sysfs_numa = read_sysfs_numa()
    if sysfs_numa and not any(key.startswith("NUMA node") for key in (lscpu_fields or {})):
        sources.append(SYSFS_NODES)
    uname = os.uname()
    sources.append("uname")

    probe = probe_amx(uname.machine) if module.params["probe"] else ProbeResult(ran=False, detail="probe=false")

    try:
        facts = gather_cpu_facts(
            cpuinfo,
            lscpu_fields,
            machine=uname.machine,
            kernel_release=uname.release,
            probe=probe,
            sysfs_numa=sysfs_numa,
            sources=sources,
            lscpu_parseable=lscpu_parseable,
            allowed_cpus=read_allowed_cpus(),
        )
    except CpuInfoError as exc:
        module.fail_json(msg=f"cannot read the CPU facts of this host: {exc}")

    for warning in facts["warnings"]:
        module.warn(f"cpu_facts: {warning}")
    module.exit_json(changed=False, ansible_facts={"amx_cpu": facts}, amx_cpu=facts)


if __name__ == "__main__":
    main()
