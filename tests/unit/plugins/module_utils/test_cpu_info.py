# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the cpu_facts parsers and the AMX decision, on fixture texts of real instance types."""

from __future__ import annotations

import errno
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from ansible_collections.amx.cluster.plugins.module_utils import cpu_info
from ansible_collections.amx.cluster.plugins.module_utils.cpu_info import (
    CpuInfoError,
    ProbeResult,
    decide_amx,
    gather_cpu_facts,
    parse_cpuinfo,
    parse_cpulist,
    parse_kernel_release,
    parse_lscpu_json,
    parse_lscpu_text,
    probe_amx,
)

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "cpu"

SPR_FLAGS = {
    "amx_tile": True,
    "amx_bf16": True,
    "amx_int8": True,
    "amx_fp16": False,
    "avx512f": True,
    "avx512_bf16": True,
    "avx512_vnni": True,
    "avx512_fp16": True,
}
NO_FLAGS = dict.fromkeys(SPR_FLAGS, False)

# What each fixture machine is, written down from the instance type's published shape.
EXPECTED = {
    "spr_metal_r7iz": {
        "vendor": "GenuineIntel",
        "model_name": "Intel(R) Xeon(R) Gold 6455B",
        "architecture": "x86_64",
        "sockets": 2,
        "cores_per_socket": 16,
        "threads_per_core": 2,
        "physical_cores": 32,
        "logical_cpus": 64,
        "numa_nodes": [
            {"node": 0, "cpus": list(range(0, 16)) + list(range(32, 48))},
            {"node": 1, "cpus": list(range(16, 32)) + list(range(48, 64))},
        ],
        "virtualized": False,
        "hypervisor": "",
        "flags": SPR_FLAGS,
    },
    "spr_vm_no_amx": {
        "vendor": "GenuineIntel",
        "model_name": "Intel(R) Xeon(R) Gold 6455B",
        "architecture": "x86_64",
        "sockets": 1,
        "cores_per_socket": 4,
        "threads_per_core": 2,
        "physical_cores": 4,
        "logical_cpus": 8,
        "numa_nodes": [{"node": 0, "cpus": list(range(8))}],
        "virtualized": True,
        "hypervisor": "KVM",
        "flags": dict(SPR_FLAGS, amx_tile=False, amx_bf16=False, amx_int8=False),
    },
    "icelake_c6i": {
        "vendor": "GenuineIntel",
        "model_name": "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz",
        "architecture": "x86_64",
        "sockets": 1,
        "cores_per_socket": 8,
        "threads_per_core": 2,
        "physical_cores": 8,
        "logical_cpus": 16,
        "numa_nodes": [{"node": 0, "cpus": list(range(16))}],
        "virtualized": True,
        "hypervisor": "KVM",
        "flags": dict(NO_FLAGS, avx512f=True, avx512_vnni=True),
    },
    "gnr_m8i": {
        "vendor": "GenuineIntel",
        "model_name": "Intel(R) Xeon(R) 6975P-C",
        "architecture": "x86_64",
        "sockets": 1,
        "cores_per_socket": 8,
        "threads_per_core": 2,
        "physical_cores": 8,
        "logical_cpus": 16,
        "numa_nodes": [{"node": 0, "cpus": list(range(16))}],
        "virtualized": True,
        "hypervisor": "KVM",
        "flags": dict(SPR_FLAGS, amx_fp16=True),
    },
    "zen4_m7a": {
        "vendor": "AuthenticAMD",
        "model_name": "AMD EPYC 9R14",
        "architecture": "x86_64",
        "sockets": 1,
        "cores_per_socket": 8,
        "threads_per_core": 1,
        "physical_cores": 8,
        "logical_cpus": 8,
        "numa_nodes": [{"node": 0, "cpus": list(range(8))}],
        "virtualized": True,
        "hypervisor": "KVM",
        "flags": dict(NO_FLAGS, avx512f=True, avx512_bf16=True, avx512_vnni=True),
    },
    "arm64_c7g": {
        "vendor": "ARM",
        "model_name": "Neoverse-V1",
        "architecture": "aarch64",
        "sockets": 1,
        "cores_per_socket": 8,
        "threads_per_core": 1,
        "physical_cores": 8,
        "logical_cpus": 8,
        "numa_nodes": [{"node": 0, "cpus": list(range(8))}],
        "virtualized": False,
        "hypervisor": "",
        "flags": NO_FLAGS,
    },
}

KERNELS = {
    "spr_metal_r7iz": "5.15.0-1028-aws",
    "spr_vm_no_amx": "5.15.0-1031-aws",
    "icelake_c6i": "5.4.0-1103-aws",
    "gnr_m8i": "6.8.0-1024-aws",
    "zen4_m7a": "6.1.0-28-cloud-amd64",
    "arm64_c7g": "6.8.0-1021-aws",
}

GRANTED = ProbeResult(ran=True, supported_mask=0x602E7, tile_data_supported=True, permission_granted=True)
REFUSED_OLD = ProbeResult(
    ran=True,
    detail="ARCH_GET_XCOMP_SUPP failed: errno 22 (EINVAL)",
    permission_granted=False,
    error_number=errno.EINVAL,
)
NOT_RUN = ProbeResult(ran=False, detail="probe=false")


def fixture_text(name: str, filename: str) -> str:
    return (FIXTURES / name / filename).read_text()


def lscpu_fields(name: str, mode: str):
    if mode == "json":
        return parse_lscpu_json(fixture_text(name, "lscpu.json"))
    if mode == "text":
        return parse_lscpu_text(fixture_text(name, "lscpu.txt"))
    return None


def sysfs_numa_of(expected):
    """The /sys/devices/system/node/node*/cpulist texts the machine would have."""
    texts = {}
    for node in expected["numa_nodes"]:
        cpus, parts, start = node["cpus"], [], None
        for i, cpu in enumerate(cpus):
            if start is None:
                start = cpu
            if i + 1 == len(cpus) or cpus[i + 1] != cpu + 1:
                parts.append(str(start) if start == cpu else f"{start}-{cpu}")
                start = None
        texts[node["node"]] = ",".join(parts) + "\n"
    return texts


# --------------------------------------------------------------------------------------------------------------
# Small parsers
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0-15,32-47", list(range(16)) + list(range(32, 48))),
        ("0,1", [0, 1]),
        ("5", [5]),
        ("", []),
        (None, []),
        ("0-3, 8-11\n", [0, 1, 2, 3, 8, 9, 10, 11]),
        ("4-7,0-3", list(range(8))),
        ("0-7:2/4", [0, 1, 4, 5]),  # the kernel's strided form: 2 of every 4
        ("0-9:1/3", [0, 3, 6, 9]),
    ],
)
def test_parse_cpulist(text, expected):
    assert parse_cpulist(text) == expected


@pytest.mark.parametrize("text", ["a-b", "3-1", "0-", "1,,x", "0..3", "0-7:4/2", "0-7:1/0"])
def test_parse_cpulist_rejects_garbage(text):
    with pytest.raises(CpuInfoError, match="cannot parse CPU list"):
        parse_cpulist(text)


@pytest.mark.parametrize(
    ("release", "expected"),
    [
        ("5.4.0-1103-aws", (5, 4, 0)),
        ("5.15.0-1028-aws", (5, 15, 0)),
        ("5.16.0-051600-generic", (5, 16, 0)),
        ("5.14.0-427.13.1.el9_4.x86_64", (5, 14, 0)),
        ("6.1.0-28-cloud-amd64", (6, 1, 0)),
        ("6.8.0-1024-aws", (6, 8, 0)),
        ("6.18.44-fc-v782", (6, 18, 44)),
        ("6.10", (6, 10, 0)),
        ("not-a-kernel", ()),
    ],
)
def test_parse_kernel_release(release, expected):
    assert parse_kernel_release(release) == expected


def test_parse_cpuinfo_rejects_text_without_processors():
    with pytest.raises(CpuInfoError, match="no 'processor' entries"):
        parse_cpuinfo("vendor_id\t: GenuineIntel\nflags\t\t: fpu\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [("{not json", "invalid JSON"), ('{"cpus": []}', "without an 'lscpu' list"), ('{"lscpu": [{"x": 1}]}', "field")],
)
def test_parse_lscpu_json_rejects_bad_documents(text, message):
    with pytest.raises(CpuInfoError, match=message):
        parse_lscpu_json(text)


def test_parse_lscpu_text_rejects_noise():
    with pytest.raises(CpuInfoError, match="Field: value"):  # lscpu's own error message is not a field
        parse_lscpu_text("lscpu: cannot open /proc/cpuinfo\n")


def test_vmx_flags_line_is_not_taken_for_cpu_flags():
    cpus = parse_cpuinfo(fixture_text("spr_metal_r7iz", "cpuinfo.txt"))
    flag_set = cpu_info.cpu_flag_set(cpus)
    assert "amx_tile" in flag_set
    assert "posted_intr" not in flag_set  # only on the 'vmx flags' line


def test_arm64_cpuinfo_features_are_its_flags():
    cpus = parse_cpuinfo(fixture_text("arm64_c7g", "cpuinfo.txt"))
    assert {"sve", "bf16", "i8mm"} <= cpu_info.cpu_flag_set(cpus)
    assert len(cpus) == 8


# --------------------------------------------------------------------------------------------------------------
# Fixture machines: lscpu JSON, lscpu text and cpuinfo alone must tell the same story
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_lscpu_json_and_text_agree(name):
    assert parse_lscpu_json(fixture_text(name, "lscpu.json")) == parse_lscpu_text(fixture_text(name, "lscpu.txt"))


def test_lscpu_tree_json_is_flattened():
    fields = parse_lscpu_json(fixture_text("arm64_c7g", "lscpu.json"))
    assert fields["Model name"] == "Neoverse-V1"  # a grandchild in the tree
    assert fields["NUMA node0 CPU(s)"] == "0-7"
    assert "Caches (sum of all)" not in fields  # a section heading without a value


@pytest.mark.parametrize("mode", ["json", "text", "cpuinfo-only"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_machine_facts(name, mode):
    expected = EXPECTED[name]
    lscpu = lscpu_fields(name, mode)
    sysfs = sysfs_numa_of(expected) if lscpu is None else None
    facts = gather_cpu_facts(
        fixture_text(name, "cpuinfo.txt"),
        lscpu,
        machine=expected["architecture"],
        kernel_release=KERNELS[name],
        probe=NOT_RUN,
        sysfs_numa=sysfs,
    )
    for key, value in expected.items():
        if key == "hypervisor" and lscpu is None and value:
            # Without lscpu only the x86 'hypervisor' flag is left: virtualized, vendor unknown.
            assert facts["hypervisor"] == "unknown"
            continue
        assert facts[key] == value, key
    assert facts["physical_cores"] * facts["threads_per_core"] == facts["logical_cpus"]
    assert sorted(cpu for node in facts["numa_nodes"] for cpu in node["cpus"]) == list(range(facts["logical_cpus"]))


def test_cpuinfo_only_without_sysfs_gives_one_node_with_every_cpu():
    facts = gather_cpu_facts(
        fixture_text("spr_metal_r7iz", "cpuinfo.txt"), None, "x86_64", KERNELS["spr_metal_r7iz"], NOT_RUN
    )
    assert facts["numa_nodes"] == [{"node": 0, "cpus": list(range(64))}]
    assert facts["sockets"] == 2
    assert facts["physical_cores"] == 32


def test_lscpu_topology_wins_over_cpuinfo():
    """lscpu counts what cpuinfo cannot (offline CPUs, arm clusters): its figures are taken when it gives them."""
    lscpu = parse_lscpu_json(fixture_text("spr_metal_r7iz", "lscpu.json"))
    lscpu["On-line CPU(s) list"] = "0-31"  # SMT switched off at run time
    lscpu["Thread(s) per core"] = "1"
    facts = gather_cpu_facts(fixture_text("spr_metal_r7iz", "cpuinfo.txt"), lscpu, "x86_64", "6.8.0", NOT_RUN)
    assert (facts["logical_cpus"], facts["threads_per_core"], facts["physical_cores"]) == (32, 1, 32)


def test_lscpu_cluster_fields_on_arm():
    lscpu = parse_lscpu_text(
        "Architecture: aarch64\nCPU(s): 64\nOn-line CPU(s) list: 0-63\nVendor ID: ARM\nModel name: Neoverse-N1\n"
        "Thread(s) per core: 1\nCore(s) per cluster: 64\nSocket(s): -\nCluster(s): 1\n"
    )
    facts = gather_cpu_facts("processor\t: 0\nFeatures\t: fp asimd\n", lscpu, "aarch64", "6.1.0", NOT_RUN)
    assert (facts["sockets"], facts["cores_per_socket"], facts["physical_cores"]) == (1, 64, 64)


def test_numa_node_without_cpus_is_kept_empty():
    lscpu = parse_lscpu_json(fixture_text("spr_metal_r7iz", "lscpu.json"))
    lscpu["NUMA node2 CPU(s)"] = ""  # a CXL memory node shows up like this
    nodes = cpu_info.numa_nodes_from(lscpu, None, list(range(64)))
    assert [node["node"] for node in nodes] == [0, 1, 2]
    assert nodes[2]["cpus"] == []


# --------------------------------------------------------------------------------------------------------------
# The AMX decision
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kernel", "probe", "usable", "reason_parts", "absent_parts"),
    [
        # The recipe's node: AWS's 5.15 kernel carries the AMX patches, and the probe proves it.
        ("spr_metal_r7iz", "5.15.0-1028-aws", GRANTED, True, [], []),
        # A 5.15 kernel without the patches does not know the arch_prctl codes.
        ("spr_metal_r7iz", "5.15.0-91-generic", REFUSED_OLD, False, ["older than 5.16", "EINVAL", "refused"], []),
        ("spr_metal_r7iz", "5.4.0-1103-aws", REFUSED_OLD, False, ["kernel 5.4.0-1103-aws is older than 5.16"], []),
        ("spr_metal_r7iz", "5.16.0-051600-generic", GRANTED, True, [], []),
        ("spr_metal_r7iz", "6.8.0-1024-aws", GRANTED, True, [], []),
        # RHEL 9's 5.14 carries the backport: the probe, not the version, decides.
        ("spr_metal_r7iz", "5.14.0-427.13.1.el9_4.x86_64", GRANTED, True, [], []),
        (
            "spr_metal_r7iz",
            "6.8.0-1024-aws",
            ProbeResult(
                ran=True,
                supported_mask=0x602E7,
                tile_data_supported=True,
                permission_granted=False,
                error_number=errno.EPERM,
            ),
            False,
            ["permission refused by the kernel", "errno 1 (EPERM"],
            ["older than 5.16", "lacks bit 18"],
        ),
        (
            "spr_metal_r7iz",
            "6.8.0-1024-aws",
            ProbeResult(
                ran=True,
                supported_mask=0x2E7,
                tile_data_supported=False,
                permission_granted=False,
                error_number=errno.EOPNOTSUPP,
            ),
            False,
            ["lacks bit 18", f"errno {errno.EOPNOTSUPP} ("],
            ["older than 5.16"],
        ),
        ("spr_metal_r7iz", "6.8.0-1024-aws", NOT_RUN, False, ["probe unavailable (probe=false)"], ["older"]),
        ("spr_metal_r7iz", "5.15.0-1028-aws", NOT_RUN, False, ["probe unavailable", "older than 5.16"], []),
        (
            "spr_vm_no_amx",
            "5.15.0-1031-aws",
            REFUSED_OLD,
            False,
            ["no AMX flags", "amx_tile, amx_bf16, amx_int8", "also, kernel 5.15.0-1031-aws is older than 5.16"],
            [],
        ),
        ("spr_vm_no_amx", "6.8.0-1024-aws", GRANTED, False, ["no AMX flags"], ["older"]),
        ("icelake_c6i", "5.4.0-1103-aws", REFUSED_OLD, False, ["no AMX flags", "5.4.0-1103-aws is older"], []),
        ("gnr_m8i", "6.8.0-1024-aws", GRANTED, True, [], []),
        ("zen4_m7a", "6.1.0-28-cloud-amd64", REFUSED_OLD, False, ["no AMX flags"], ["older"]),
        ("arm64_c7g", "6.8.0-1021-aws", NOT_RUN, False, ["not x86_64", "aarch64"], ["flags"]),
    ],
)
def test_decide_amx(name, kernel, probe, usable, reason_parts, absent_parts):
    facts = gather_cpu_facts(
        fixture_text(name, "cpuinfo.txt"),
        lscpu_fields(name, "json"),
        machine=EXPECTED[name]["architecture"],
        kernel_release=kernel,
        probe=probe,
    )
    assert facts["amx_usable"] is usable
    if usable:
        assert facts["amx_reason"] == ""
    else:
        assert facts["amx_reason"]
    for part in reason_parts:
        assert part in facts["amx_reason"]
    for part in absent_parts:
        assert part not in facts["amx_reason"]
    assert facts["kernel_release"] == kernel
    assert facts["kernel_version"] == list(parse_kernel_release(kernel))


def test_unparseable_kernel_is_not_called_old():
    usable, reason = decide_amx("x86_64", SPR_FLAGS, "custom", REFUSED_OLD)
    assert not usable
    assert "older" not in reason
    assert "EINVAL" in reason


# --------------------------------------------------------------------------------------------------------------
# The probe, with an injected arch_prctl and with the real one
# --------------------------------------------------------------------------------------------------------------


class FakeArchPrctl:
    """Stands in for a kernel we do not have here (one with AMX, one older than 5.16)."""

    def __init__(self, supported=None, supp_errno=None, req_errno=None):
        self.supported, self.supp_errno, self.req_errno = supported, supp_errno, req_errno
        self.requested = []

    def get_xcomp_supp(self):
        if self.supp_errno:
            raise OSError(self.supp_errno, "refused")
        return self.supported

    def req_xcomp_perm(self, feature):
        self.requested.append(feature)
        if self.req_errno:
            raise OSError(self.req_errno, "refused")


def test_probe_on_an_amx_kernel():
    fake = FakeArchPrctl(supported=0x602E7)
    result = probe_amx("x86_64", fake)
    assert fake.requested == [18]
    assert (result.ran, result.tile_data_supported, result.permission_granted) == (True, True, True)
    assert result.as_dict()["errno"] is None
    assert result.as_dict()["errno_name"] == ""


def test_probe_on_a_kernel_older_than_5_16():
    result = probe_amx("x86_64", FakeArchPrctl(supp_errno=errno.EINVAL, req_errno=errno.EINVAL))
    assert result.ran
    assert result.tile_data_supported is None
    assert result.permission_granted is False
    assert "ARCH_GET_XCOMP_SUPP failed: errno 22 (EINVAL)" in result.detail
    assert result.as_dict()["errno_name"] == "EINVAL"


@pytest.mark.parametrize("machine", ["aarch64", "ppc64le", "s390x"])
def test_probe_does_not_run_off_x86_64(machine):
    fake = FakeArchPrctl(supported=0x602E7)
    result = probe_amx(machine, fake)
    assert not result.ran
    assert machine in result.detail
    assert fake.requested == []


def _this_machine():
    flags = cpu_info.cpu_flag_set(parse_cpuinfo(pathlib.Path("/proc/cpuinfo").read_text()))
    return os.uname().machine, flags


def test_real_probe_on_this_machine():
    """The real syscall: its answer must match what this CPU's flags say (AMX here only with amx_tile)."""
    machine, flags = _this_machine()
    if machine != "x86_64":
        pytest.skip(f"the arch_prctl probe exists only on x86_64, this machine is {machine}")
    result = probe_amx(machine)
    assert result.ran, result.detail
    assert result.supported_mask is not None and result.supported_mask & 0x3 == 0x3  # x87 and SSE always
    assert result.tile_data_supported is ("amx_tile" in flags)
    assert result.permission_granted is ("amx_tile" in flags)
    if not result.permission_granted:
        assert result.error_number in (errno.EOPNOTSUPP, errno.EINVAL, errno.EPERM)


# --------------------------------------------------------------------------------------------------------------
# More machines, from published texts (tests/unit/fixtures/cpu/README.md names each source). Most sources
# give only plain `lscpu`; their facts come from lscpu alone, and with no per-CPU map socket_cores is the
# documented fallback (one socket, every CPU counted as a core), which the asserts say. The EPYC container's
# source gives /proc/cpuinfo only: its socket_cores come from physical id / core id.
# --------------------------------------------------------------------------------------------------------------

ONE_SOCKET_FALLBACK_WARNING = "no per-CPU socket and core numbers"

PUBLISHED = {
    # Two core types, one lscpu section each (util-linux 2.39): 10 Cortex-X925 + 10 Cortex-A725.
    "gb10_dgx_spark": {
        "vendor": "ARM",
        "model_name": "Cortex-X925",
        "sockets": 1,
        "cores_per_socket": 20,
        "threads_per_core": 1,
        "physical_cores": 20,
        "logical_cpus": 20,
        "numa_nodes": [{"node": 0, "cpus": list(range(20))}],
        "flags": NO_FLAGS,
        "socket_cores": [{"socket": 0, "numa_nodes": [0], "cores": list(range(20))}],
    },
    # arm64 with "Socket(s): -" and 3 clusters of 4 cores: one package, not three sockets.
    "jetson_agx_orin": {
        "vendor": "ARM",
        "model_name": "Cortex-A78AE",
        "sockets": 1,
        "cores_per_socket": 12,
        "threads_per_core": 1,
        "physical_cores": 12,
        "logical_cpus": 12,
        "numa_nodes": [{"node": 0, "cpus": list(range(12))}],
        "flags": NO_FLAGS,
        "socket_cores": [{"socket": 0, "numa_nodes": [0], "cores": list(range(12))}],
    },
    # Grace: one cluster of 64 cores, and 8 NUMA nodes without CPUs (the GPU's memory and its partitions).
    "gh200_grace": {
        "vendor": "ARM",
        "model_name": "Neoverse-V2",
        "sockets": 1,
        "cores_per_socket": 64,
        "threads_per_core": 1,
        "physical_cores": 64,
        "logical_cpus": 64,
        "numa_nodes": [{"node": 0, "cpus": list(range(64))}] + [{"node": n, "cpus": []} for n in range(1, 9)],
        "flags": NO_FLAGS,
        "socket_cores": [{"socket": 0, "numa_nodes": [0], "cores": list(range(64))}],
    },
    # A Sapphire Rapids guest with 2 NUMA nodes per socket; this text's flags show AVX-512 bf16 but no AMX.
    "spr_gcp_c3": {
        "vendor": "GenuineIntel",
        "model_name": "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz",
        "sockets": 2,
        "cores_per_socket": 44,
        "threads_per_core": 2,
        "physical_cores": 88,
        "logical_cpus": 176,
        "numa_nodes": [
            {"node": 0, "cpus": list(range(0, 22)) + list(range(88, 110))},
            {"node": 1, "cpus": list(range(22, 44)) + list(range(110, 132))},
            {"node": 2, "cpus": list(range(44, 66)) + list(range(132, 154))},
            {"node": 3, "cpus": list(range(66, 88)) + list(range(154, 176))},
        ],
        "flags": dict(NO_FLAGS, avx512f=True, avx512_bf16=True, avx512_vnni=True),
        "socket_cores": [{"socket": 0, "numa_nodes": [0, 1, 2, 3], "cores": list(range(176))}],
    },
    # Raptor Lake laptop, 4 P-cores with SMT + 8 E-cores without, printed by util-linux 2.37 as one section.
    "rpl_i5_1340p": {
        "vendor": "GenuineIntel",
        "model_name": "13th Gen Intel(R) Core(TM) i5-1340P",
        "sockets": 1,
        "cores_per_socket": 12,
        "threads_per_core": 2,
        "physical_cores": 12,
        "logical_cpus": 16,
        "numa_nodes": [{"node": 0, "cpus": list(range(16))}],
        "flags": NO_FLAGS,
        "socket_cores": [{"socket": 0, "numa_nodes": [0], "cores": list(range(16))}],
    },
    # Xeon Max (Sapphire Rapids with HBM), 2 x 56 cores, sub-NUMA clustering in 4: 8 NUMA nodes with CPUs, 4 per
    # socket, and 8 HBM nodes without; AMX flags, in a Flags field wrapped inside words ("seria" / "lize").
    "xeon_max_9480": {
        "vendor": "GenuineIntel",
        "model_name": "Intel (R) Xeon (R) CPU Max 9480",
        "sockets": 2,
        "cores_per_socket": 56,
        "threads_per_core": 2,
        "physical_cores": 112,
        "logical_cpus": 224,
        "numa_nodes": [
            {"node": n, "cpus": list(range(14 * n, 14 * n + 14)) + list(range(112 + 14 * n, 126 + 14 * n))}
            for n in range(8)
        ]
        + [{"node": n, "cpus": []} for n in range(8, 16)],
        "flags": SPR_FLAGS,
        "socket_cores": [{"socket": 0, "numa_nodes": list(range(8)), "cores": list(range(224))}],
    },
    # A 2-socket Sapphire Rapids server, Xeon Platinum 8468 (2 x 48 x 2 = 192 CPUs), one NUMA node per socket.
    "spr_8468": {
        "vendor": "GenuineIntel",
        "model_name": "Intel(R) Xeon(R) Platinum 8468",
        "sockets": 2,
        "cores_per_socket": 48,
        "threads_per_core": 2,
        "physical_cores": 96,
        "logical_cpus": 192,
        "numa_nodes": [
            {"node": 0, "cpus": list(range(0, 48)) + list(range(96, 144))},
            {"node": 1, "cpus": list(range(48, 96)) + list(range(144, 192))},
        ],
        "flags": SPR_FLAGS,
        "socket_cores": [{"socket": 0, "numa_nodes": [0, 1], "cores": list(range(192))}],
    },
    # A container's view of a 2-socket EPYC 9754 host: 2 packages of 4 cores, one thread each (no SMT).
    "epyc9754_lxc": {
        "vendor": "AuthenticAMD",
        "model_name": "AMD EPYC 9754 128-Core Processor",
        "sockets": 2,
        "cores_per_socket": 4,
        "threads_per_core": 1,
        "physical_cores": 8,
        "logical_cpus": 8,
        "numa_nodes": [{"node": 0, "cpus": list(range(8))}],
        "flags": dict(NO_FLAGS, avx512f=True, avx512_bf16=True, avx512_vnni=True),
        "socket_cores": [
            {"socket": 0, "numa_nodes": [0], "cores": [0, 1, 2, 3]},
            {"socket": 1, "numa_nodes": [0], "cores": [4, 5, 6, 7]},
        ],
    },
}


def published_facts(name):
    """The facts of a published machine from the texts its source gives (lscpu alone, or cpuinfo alone)."""
    folder = FIXTURES / name
    warnings = []
    if (folder / "cpuinfo.txt").exists():
        cpus, lscpu = parse_cpuinfo(fixture_text(name, "cpuinfo.txt")), None
    else:
        cpus, lscpu = [], parse_lscpu_text(fixture_text(name, "lscpu.txt"))
    facts = cpu_info.topology(cpus, lscpu, warnings=warnings)
    facts.update(cpu_info.identity(cpus, lscpu))
    facts["flags"] = cpu_info.flags_of_interest(cpu_info.cpu_flag_set(cpus, lscpu))
    return facts, warnings


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_machine_facts(name):
    expected = PUBLISHED[name]
    facts, warnings = published_facts(name)
    for key, value in expected.items():
        assert facts[key] == value, key
    assert facts["allowed_cpus"] == list(range(expected["logical_cpus"]))
    assert facts["usable_physical_cores"] == sum(len(socket["cores"]) for socket in expected["socket_cores"])
    uses_fallback = len(expected["socket_cores"]) == 1 and expected["socket_cores"][0]["cores"] == facts["allowed_cpus"]
    assert any(ONE_SOCKET_FALLBACK_WARNING in warning for warning in warnings) is (
        uses_fallback and not (FIXTURES / name / "cpuinfo.txt").exists()
    )


def arm_cpuinfo_blocks(count):
    """What arm64's /proc/cpuinfo says about topology: the processor numbers, nothing more."""
    return [{"processor": str(n), "Features": "fp asimd"} for n in range(count)]


def test_every_section_of_a_hybrid_lscpu_counts():
    """Defect: only the first core type's "Core(s) per socket" was read (10 of the GB10's 20 cores)."""
    lscpu = parse_lscpu_text(fixture_text("gb10_dgx_spark", "lscpu.txt"))
    facts = cpu_info.topology(arm_cpuinfo_blocks(20), lscpu)
    assert (facts["sockets"], facts["physical_cores"], facts["logical_cpus"]) == (1, 20, 20)
    assert (lscpu["Model name"], lscpu.get("Model name #2")) == ("Cortex-X925", "Cortex-A725")


def test_a_hybrid_lscpu_tree_json_counts_every_section():
    """The same sections as `lscpu -J` prints them on a terminal (children of "Vendor ID")."""

    def section(model):
        return {
            "field": "Model name:",
            "data": model,
            "children": [
                {"field": "Thread(s) per core:", "data": "1"},
                {"field": "Core(s) per socket:", "data": "10"},
                {"field": "Socket(s):", "data": "1"},
            ],
        }

    document = {
        "lscpu": [
            {"field": "Architecture:", "data": "aarch64"},
            {"field": "CPU(s):", "data": "20", "children": [{"field": "On-line CPU(s) list:", "data": "0-19"}]},
            {"field": "Vendor ID:", "data": "ARM", "children": [section("Cortex-X925"), section("Cortex-A725")]},
        ]
    }
    lscpu = parse_lscpu_json(json.dumps(document))
    assert (lscpu["Model name #2"], lscpu["Core(s) per socket #2"]) == ("Cortex-A725", "10")
    facts = cpu_info.topology([], lscpu)
    assert (facts["sockets"], facts["cores_per_socket"], facts["physical_cores"]) == (1, 20, 20)


def test_clusters_are_not_sockets():
    """Defect: "Cluster(s): 3" on a Jetson AGX Orin was read as 3 sockets of 4 cores."""
    facts = cpu_info.topology(arm_cpuinfo_blocks(12), parse_lscpu_text(fixture_text("jetson_agx_orin", "lscpu.txt")))
    assert (facts["sockets"], facts["cores_per_socket"], facts["physical_cores"]) == (1, 12, 12)


def test_wrapped_lscpu_flags_are_joined_back():
    """lscpu cut the 8481C's Flags at a fixed width, inside words ("sha_n" / "i"): the flags are whole again."""
    flags = parse_lscpu_text(fixture_text("spr_gcp_c3", "lscpu.txt"))["Flags"].split()
    assert {"sha_ni", "lahf_lm", "avx2", "avx512_bf16", "md_clear", "arch_capabilities", "syscall"} <= set(flags)
    assert not {"sha_n", "i", "l", "ahf_lm", "v", "aes vpclmulqdq"} & set(flags)


def test_amx_flags_in_a_wrapped_flags_field():
    """The Xeon Max's Flags were cut inside "serialize" and "avx512dq"; the AMX flags after the cut count."""
    facts, _warnings = published_facts("xeon_max_9480")
    assert facts["flags"] == SPR_FLAGS
    flags = set(parse_lscpu_text(fixture_text("xeon_max_9480", "lscpu.txt"))["Flags"].split())
    assert {"serialize", "avx512dq", "intel_ppin", "cqm_mbm_local", "waitpkg"} <= flags


def test_empty_numa_lines_of_plain_lscpu_are_kept():
    lscpu = parse_lscpu_text(fixture_text("gh200_grace", "lscpu.txt"))
    assert lscpu["NUMA node8 CPU(s)"] == ""


# --------------------------------------------------------------------------------------------------------------
# Allowed CPUs and socket_cores
# --------------------------------------------------------------------------------------------------------------

R7IZ_SMT_SIBLINGS = {cpu: cpu + 32 for cpu in range(32)}


def r7iz_topology(**kwargs):
    cpus = parse_cpuinfo(fixture_text("spr_metal_r7iz", "cpuinfo.txt"))
    return cpu_info.topology(cpus, lscpu_fields("spr_metal_r7iz", "json"), **kwargs)


def test_socket_cores_from_cpuinfo_on_the_recipe_node():
    facts = r7iz_topology()
    assert facts["socket_cores"] == [
        {"socket": 0, "numa_nodes": [0], "cores": list(range(0, 16))},
        {"socket": 1, "numa_nodes": [1], "cores": list(range(16, 32))},
    ]
    assert facts["usable_physical_cores"] == 32
    assert facts["allowed_cpus"] == list(range(64))


@pytest.mark.parametrize(
    ("allowed", "cores", "usable"),
    [
        ([0], [[0], []], 1),
        ([0, 32], [[0], []], 1),  # two threads of one core: one usable core
        ([32, 33], [[32, 33], []], 2),  # the second thread of a core stands for it
        (list(range(16, 32)) + list(range(48, 64)), [[], list(range(16, 32))], 16),
        ("0-3,48", [[0, 1, 2, 3], [48]], 5),  # a Cpus_allowed_list text
    ],
)
def test_allowed_cpus_narrow_socket_cores_but_not_the_host_figures(allowed, cores, usable):
    """Defect: in a cpuset or under taskset the module reported only the host's cores."""
    facts = r7iz_topology(allowed_cpus=allowed)
    assert [socket["cores"] for socket in facts["socket_cores"]] == cores
    assert facts["usable_physical_cores"] == usable
    assert [socket["socket"] for socket in facts["socket_cores"]] == [0, 1]
    assert (facts["sockets"], facts["physical_cores"], facts["logical_cpus"]) == (2, 32, 64)


def test_socket_cores_from_lscpu_parseable():
    text = (
        "# The following is the parsable format, which can be fed to other\n"
        "# programs. Each different item in every column has an unique ID\n"
        "# starting usually from zero.\n"
        "# CPU,Core,Socket,Node\n"
        "0,0,0,0\n1,1,0,1\n2,2,1,2\n3,3,1,3\n4,0,0,0\n5,1,0,1\n6,2,1,2\n7,3,1,3\n"
    )
    cpus = [{"processor": str(n)} for n in range(8)]  # no physical id: lscpu -p alone tells the sockets
    facts = cpu_info.topology(cpus, None, lscpu_parseable=text, allowed_cpus=[1, 4, 5, 6])
    assert facts["socket_cores"] == [
        {"socket": 0, "numa_nodes": [0, 1], "cores": [1, 4]},
        {"socket": 1, "numa_nodes": [2, 3], "cores": [6]},
    ]
    assert facts["usable_physical_cores"] == 3
    assert facts["sockets"] == 2


def test_lscpu_parseable_without_numa_takes_the_nodes_of_the_numa_facts():
    text = "# CPU,Core,Socket,Node\n0,0,0,\n1,0,0,\n2,1,0,\n3,1,0,\n"
    facts = cpu_info.topology([{"processor": str(n)} for n in range(4)], None, lscpu_parseable=text)
    assert facts["socket_cores"] == [{"socket": 0, "numa_nodes": [0], "cores": [0, 2]}]
    assert facts["usable_physical_cores"] == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# CPU,Core,Socket,Node\n0,0,0,0\n1,x,0,0\n", "line 3: CORE is not a number"),
        ("# CPU,Core,Socket,Node\n0,0,0\n", "has 3 fields, expected 4"),
        ("# CPU,Core,Socket,Node\n", "no CPU lines"),
        ("# CPU,Core,Socket,Node\n,0,0,0\n", "has no CPU number"),
    ],
)
def test_parse_lscpu_parseable_rejects_garbage(text, message):
    with pytest.raises(CpuInfoError, match=message):
        cpu_info.parse_lscpu_parseable(text)


# --------------------------------------------------------------------------------------------------------------
# A malformed text falls back to the next source, with a warning, and never fails the facts
# --------------------------------------------------------------------------------------------------------------


def gather_r7iz(lscpu, **kwargs):
    return gather_cpu_facts(fixture_text("spr_metal_r7iz", "cpuinfo.txt"), lscpu, "x86_64", "6.8.0", NOT_RUN, **kwargs)


def test_bad_online_list_falls_back_to_cpuinfo():
    lscpu = lscpu_fields("spr_metal_r7iz", "json")
    lscpu["On-line CPU(s) list"] = "0-3,x"
    facts = gather_r7iz(lscpu)
    assert facts["logical_cpus"] == 64
    assert any("on-line CPU list was not used" in warning for warning in facts["warnings"])


def test_bad_numa_line_falls_back_to_sysfs_then_to_one_node():
    lscpu = lscpu_fields("spr_metal_r7iz", "json")
    lscpu["NUMA node1 CPU(s)"] = "16-31,48-6x"
    sysfs = sysfs_numa_of(EXPECTED["spr_metal_r7iz"])
    facts = gather_r7iz(lscpu, sysfs_numa=sysfs)
    assert facts["numa_nodes"] == EXPECTED["spr_metal_r7iz"]["numa_nodes"]
    assert [w for w in facts["warnings"] if "NUMA" in w] == [
        "lscpu's NUMA lists were not used: cannot parse CPU list '16-31,48-6x': bad element '48-6x'"
    ]
    facts = gather_r7iz(lscpu, sysfs_numa={0: "0-15,32-47\n", 1: "garbage\n"})
    assert facts["numa_nodes"] == [{"node": 0, "cpus": list(range(64))}]
    assert len([w for w in facts["warnings"] if "NUMA" in w]) == 2


def test_bad_lscpu_parseable_falls_back_to_cpuinfo():
    facts = gather_r7iz(lscpu_fields("spr_metal_r7iz", "json"), lscpu_parseable="0,0,0,0\n1,0,zero,0\n")
    assert facts["socket_cores"] == r7iz_topology()["socket_cores"]
    assert facts["warnings"] == [
        "lscpu -p was not used: lscpu -p line 2: SOCKET is not a number; socket_cores come from /proc/cpuinfo"
    ]


def test_bad_allowed_list_counts_every_online_cpu():
    facts = gather_r7iz(lscpu_fields("spr_metal_r7iz", "json"), allowed_cpus="0-3,x")
    assert facts["allowed_cpus"] == list(range(64))
    assert facts["usable_physical_cores"] == 32
    assert any("allowed CPU list was not used" in warning for warning in facts["warnings"])


def test_clean_texts_give_no_warnings():
    assert gather_r7iz(lscpu_fields("spr_metal_r7iz", "json"))["warnings"] == []


# --------------------------------------------------------------------------------------------------------------
# This machine, for real: lscpu -p and /proc/cpuinfo agree, and taskset narrows what a process may use
# --------------------------------------------------------------------------------------------------------------


def _lscpu_parseable_here():
    lscpu = shutil.which("lscpu")
    if lscpu is None:
        pytest.skip("lscpu (util-linux) is not installed")
    return subprocess.run(
        [lscpu, "-p=CPU,CORE,SOCKET,NODE"], capture_output=True, text=True, check=True, env=dict(os.environ, LC_ALL="C")
    ).stdout


def test_lscpu_parseable_and_cpuinfo_agree_on_this_machine():
    cpus = parse_cpuinfo(pathlib.Path("/proc/cpuinfo").read_text())
    if cpu_info._cpu_map_from_cpuinfo(cpus) is None:
        pytest.skip("this machine's /proc/cpuinfo has no physical id / core id")
    from_lscpu = cpu_info.topology(cpus, None, lscpu_parseable=_lscpu_parseable_here())
    from_cpuinfo = cpu_info.topology(cpus, None)
    assert from_lscpu["socket_cores"] == from_cpuinfo["socket_cores"]
    assert from_lscpu["usable_physical_cores"] == from_cpuinfo["usable_physical_cores"]


GATHER_HERE = """
import json, os, pathlib, subprocess
from ansible_collections.amx.cluster.plugins.module_utils import cpu_info
text = subprocess.run(["lscpu", "-p=CPU,CORE,SOCKET,NODE"], capture_output=True, text=True, check=True).stdout
facts = cpu_info.gather_cpu_facts(
    pathlib.Path("/proc/cpuinfo").read_text(), None, os.uname().machine, os.uname().release,
    cpu_info.ProbeResult(ran=False), lscpu_parseable=text, allowed_cpus=sorted(os.sched_getaffinity(0)),
)
print(json.dumps(facts))
"""


def test_gathering_under_taskset_sees_one_cpu():
    """The real affinity: `taskset -c 0` leaves the process CPU 0, the host keeps all its cores."""
    taskset = shutil.which("taskset")
    if taskset is None or not hasattr(os, "sched_getaffinity"):
        pytest.skip("taskset (util-linux) or os.sched_getaffinity is missing here")
    _lscpu_parseable_here()
    env = dict(os.environ, LC_ALL="C", PYTHONPATH=os.pathsep.join(sys.path))
    run = [sys.executable, "-c", GATHER_HERE]
    free = json.loads(subprocess.run(run, capture_output=True, text=True, check=True, env=env).stdout)
    pinned = json.loads(
        subprocess.run([taskset, "-c", "0", *run], capture_output=True, text=True, check=True, env=env).stdout
    )
    assert pinned["allowed_cpus"] == [0]
    assert pinned["usable_physical_cores"] == 1
    assert [socket["cores"] for socket in pinned["socket_cores"] if socket["cores"]] == [[0]]
    assert free["allowed_cpus"] == sorted(os.sched_getaffinity(0))
    for key in ("sockets", "cores_per_socket", "threads_per_core", "physical_cores", "logical_cpus", "numa_nodes"):
        assert pinned[key] == free[key], key
    assert pinned["logical_cpus"] == os.cpu_count()
