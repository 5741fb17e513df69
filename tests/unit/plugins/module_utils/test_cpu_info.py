"""Unit tests of the cpu_facts parsers and the AMX decision, on fixture texts of real instance types."""

from __future__ import annotations

import errno
import os
import pathlib

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
