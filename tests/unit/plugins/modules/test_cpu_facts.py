# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cpu_facts module for real: run through `ansible` on this machine and compared with its own lscpu."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess

import ad_hoc
import pytest
import yaml

from ansible_collections.amx.cluster.plugins.module_utils.cpu_info import ProbeResult, gather_cpu_facts
from ansible_collections.amx.cluster.plugins.modules import cpu_facts

REPO = pathlib.Path(__file__).resolve().parents[4]
TOPOLOGY_KEYS = (
    "vendor",
    "model_name",
    "sockets",
    "cores_per_socket",
    "threads_per_core",
    "physical_cores",
    "logical_cpus",
    "numa_nodes",
    "flags",
    "amx_usable",
    "allowed_cpus",
    "usable_physical_cores",
    "socket_cores",
)


def run_module(*args: str, path: str | None = None, check: bool = False, prefix: tuple = ()) -> dict:
    """`ansible localhost -m amx.cluster.cpu_facts` with the JSON callback; returns the host's result.

    `prefix` runs the whole command under another one (`taskset -c 0`): the module's process inherits it.
    """
    result = ad_hoc.run_module("cpu_facts", " ".join(args), check=check, path=path, prefix=prefix)
    assert not result.get("failed"), result
    return result


def real_lscpu() -> dict:
    """This machine's `lscpu -J`, read here without the module's parser."""
    out = subprocess.run(
        ["lscpu", "-J"], capture_output=True, text=True, check=True, env=dict(os.environ, LC_ALL="C")
    ).stdout
    fields = {}

    def walk(entries):
        for entry in entries:
            if entry.get("data") is not None:
                fields[entry["field"].rstrip(":")] = entry["data"]
            walk(entry.get("children", []))

    walk(json.loads(out)["lscpu"])
    return fields


def expand(cpulist: str) -> list:
    cpus = []
    for part in cpulist.split(","):
        low, _sep, high = part.partition("-")
        cpus += list(range(int(low), int(high or low) + 1))
    return cpus


def this_machine_has_amx() -> bool:
    return " amx_tile" in pathlib.Path("/proc/cpuinfo").read_text()


needs_lscpu = pytest.mark.skipif(shutil.which("lscpu") is None, reason="lscpu (util-linux) is not installed")


@pytest.fixture(scope="module")
def facts_here() -> dict:
    result = run_module()
    assert result["changed"] is False
    assert result["ansible_facts"]["amx_cpu"] == result["amx_cpu"]
    return result["amx_cpu"]


@needs_lscpu
def test_module_agrees_with_lscpu_on_this_machine(facts_here):
    lscpu = real_lscpu()
    assert facts_here["architecture"] == lscpu["Architecture"] == os.uname().machine
    assert facts_here["vendor"] == lscpu["Vendor ID"]
    assert facts_here["model_name"] == lscpu["Model name"]
    assert facts_here["sockets"] == int(lscpu["Socket(s)"])
    assert facts_here["cores_per_socket"] == int(lscpu["Core(s) per socket"])
    assert facts_here["threads_per_core"] == int(lscpu["Thread(s) per core"])
    assert facts_here["physical_cores"] == int(lscpu["Socket(s)"]) * int(lscpu["Core(s) per socket"])
    assert facts_here["logical_cpus"] == len(expand(lscpu["On-line CPU(s) list"])) == os.cpu_count()
    numa = {k: v for k, v in lscpu.items() if k.startswith("NUMA node") and k.endswith("CPU(s)")}
    nodes = {int(k.split()[1][len("node") :]): expand(v) for k, v in numa.items()}
    assert facts_here["numa_nodes"] == [{"node": n, "cpus": nodes[n]} for n in sorted(nodes)]
    assert facts_here["hypervisor"] == lscpu.get("Hypervisor vendor", "")
    assert facts_here["virtualized"] is ("Hypervisor vendor" in lscpu)
    for flag, present in facts_here["flags"].items():
        assert present is (flag in lscpu["Flags"].split()), flag
    assert facts_here["kernel_release"] == os.uname().release
    assert facts_here["sources"] == ["/proc/cpuinfo", "lscpu -J", "lscpu -p", "uname"]
    assert facts_here["warnings"] == []
    assert facts_here["allowed_cpus"] == sorted(os.sched_getaffinity(0))


def real_lscpu_parseable() -> list:
    """This machine's `lscpu -p=CPU,CORE,SOCKET,NODE` rows (cpu, core, socket, node), read here."""
    out = subprocess.run(
        ["lscpu", "-p=CPU,CORE,SOCKET,NODE"],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, LC_ALL="C"),
    ).stdout
    return [tuple(line.split(",")) for line in out.splitlines() if line and not line.startswith("#")]


@needs_lscpu
def test_socket_cores_match_lscpu_parseable_on_this_machine(facts_here):
    sockets = {}
    for cpu, core, socket, node in real_lscpu_parseable():
        entry = sockets.setdefault(int(socket), {"nodes": set(), "cores": {}})
        entry["nodes"].add(int(node or 0))
        entry["cores"].setdefault(int(core), int(cpu))
    assert facts_here["socket_cores"] == [
        {"socket": s, "numa_nodes": sorted(sockets[s]["nodes"]), "cores": sorted(sockets[s]["cores"].values())}
        for s in sorted(sockets)
    ]
    assert facts_here["usable_physical_cores"] == facts_here["physical_cores"]


@pytest.mark.skipif(shutil.which("taskset") is None, reason="taskset (util-linux) is not installed")
def test_module_under_taskset_reports_the_cpus_it_may_use(facts_here):
    """A CPU-limited process (here `taskset -c 0`; a cpuset acts the same): one CPU, one usable core."""
    facts = run_module(prefix=(shutil.which("taskset"), "-c", "0"))["amx_cpu"]
    assert facts["allowed_cpus"] == [0]
    assert facts["usable_physical_cores"] == 1
    assert [socket["cores"] for socket in facts["socket_cores"]] == [
        [0] if 0 in socket["cores"] else [] for socket in facts_here["socket_cores"]
    ]
    for key in ("sockets", "cores_per_socket", "threads_per_core", "physical_cores", "logical_cpus", "numa_nodes"):
        assert facts[key] == facts_here[key], key


def test_amx_is_not_usable_on_this_machine(facts_here):
    if this_machine_has_amx():
        pytest.skip("this machine's CPU has AMX; the test expects the AMX-less development machine")
    assert facts_here["amx_usable"] is False
    if facts_here["architecture"] == "x86_64":
        assert facts_here["amx_reason"].startswith("no AMX flags in /proc/cpuinfo (missing: amx_tile")
        assert facts_here["amx_probe"]["ran"] is True
        assert facts_here["amx_probe"]["permission_granted"] is False
        assert facts_here["amx_probe"]["tile_data_supported"] is False
        assert facts_here["amx_probe"]["errno_name"]
    else:
        assert facts_here["amx_reason"].startswith("not x86_64")


def test_check_mode_returns_the_same_facts(facts_here):
    result = run_module(check=True)
    assert result["changed"] is False
    assert result["amx_cpu"] == facts_here


def test_probe_false_reports_the_probe_as_not_run(facts_here):
    result = run_module("probe=false")
    assert result["amx_cpu"]["amx_probe"]["ran"] is False
    assert result["amx_cpu"]["amx_probe"]["detail"] == "probe=false"
    assert result["amx_cpu"]["amx_usable"] is False
    assert result["amx_cpu"]["physical_cores"] == facts_here["physical_cores"]


@needs_lscpu
def test_falls_back_to_plain_lscpu_when_json_is_refused(tmp_path, facts_here):
    """An lscpu older than util-linux 2.30 has no -J: a stand-in that refuses it, then runs the real one."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    stand_in = bindir / "lscpu"
    stand_in.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do [ "$arg" = -J ] && { echo "lscpu: invalid option -- \'J\'" >&2; exit 1; }; done\n'
        f'exec {shutil.which("lscpu")} "$@"\n'
    )
    stand_in.chmod(0o755)
    result = run_module(path=f"{bindir}:{os.environ['PATH']}")
    facts = result["amx_cpu"]
    assert facts["sources"] == ["/proc/cpuinfo", "lscpu", "lscpu -p", "uname"]
    for key in (*TOPOLOGY_KEYS, "hypervisor", "amx_reason"):
        assert facts[key] == facts_here[key], key


def test_cpuinfo_alone_when_lscpu_is_missing(tmp_path, facts_here):
    """A PATH with every usual command except lscpu: /proc/cpuinfo and sysfs must give the same topology."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for folder in ("/usr/local/bin", "/usr/bin", "/bin"):
        for entry in pathlib.Path(folder).glob("*"):
            target = bindir / entry.name
            if entry.name != "lscpu" and not target.exists():
                target.symlink_to(entry)
    result = run_module(path=str(bindir))
    facts = result["amx_cpu"]
    assert "lscpu" not in " ".join(facts["sources"])
    for key in (*TOPOLOGY_KEYS, "virtualized"):
        assert facts[key] == facts_here[key], key
    if facts_here["hypervisor"]:
        assert facts["hypervisor"] == "unknown"  # only the 'hypervisor' CPU flag is left to say so


# ------------------------------------------------------------------------------------------------------------
# The documentation matches the code
# ------------------------------------------------------------------------------------------------------------


def test_documented_options_match_the_argspec():
    documentation = yaml.safe_load(cpu_facts.DOCUMENTATION)
    assert documentation["module"] == "cpu_facts"
    assert documentation["options"] == {
        "probe": {
            "description": documentation["options"]["probe"]["description"],
            "type": "bool",
            "default": True,
        }
    }
    source = pathlib.Path(cpu_facts.__file__).read_text()
    assert 'argument_spec=dict(probe=dict(type="bool", default=True))' in source
    yaml.safe_load(cpu_facts.EXAMPLES)


def test_documented_return_keys_match_the_facts(facts_here):
    returned = yaml.safe_load(cpu_facts.RETURN)["amx_cpu"]["contains"]
    assert set(returned) == set(facts_here)
    assert set(returned["amx_probe"]["contains"]) == set(facts_here["amx_probe"])
    offline = gather_cpu_facts("processor\t: 0\nflags\t\t: fpu\n", None, "x86_64", "6.1.0", ProbeResult(ran=False))
    assert set(offline) == set(returned)
