# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node state stamp's rules: parsing what the node says, the stamp itself, and the decision to skip a role."""

from __future__ import annotations

import json

import pytest

from ansible_collections.amx.cluster.plugins.module_utils import node_probe as np
from ansible_collections.amx.cluster.plugins.module_utils import node_state as ns

BOOT = "0f6c2d2e-3c1b-4a57-9a4e-8e2f5b8f7b10"
NOW = 1_800_000_000
INPUTS = "a" * 64
PROBE = {
    "packages": ["libgoogle-perftools-dev", "python3-venv"],
    "venv": "/opt/amx-cluster/venv",
    "manifest": "/opt/amx-cluster/venv/torch-stack-manifest.json",
    "files": ["/root/.ssh/id_ed25519", "/root/hosts"],
    "amx": True,
}
FINGERPRINT = {
    "boot_id": BOOT,
    "kernel": "6.8.0",
    "python": "3.11.2",
    "files": {
        "/opt/amx-cluster/venv/torch-stack-manifest.json": {"sha256": "d" * 64, "mode": "0644", "uid": 1000},
        "/root/.ssh/id_ed25519": {"sha256": "e" * 64, "mode": "0600", "uid": 0},
        "/root/hosts": {"sha256": "f" * 64, "mode": "0644", "uid": 0},
    },
    "trees": {},
    "venv": {
        "path": "/opt/amx-cluster/venv",
        "distributions": {"torch": "2.13.0+cpu", "transformers": "5.24.0"},
        "pyvenv_cfg": {"sha256": "c" * 64, "mode": "0644", "uid": 0},
    },
    "packages": {"libgoogle-perftools-dev": "2.10-1", "python3-venv": "3.11.2-1+b1"},
    "amx": {"amx_usable": True, "amx_reason": "", "kernel_release": "6.8.0", "flags": {"amx_tile": True}},
}


def stamp(**changes):
    built = ns.build_stamp(
        "torch_stack", INPUTS, PROBE, FINGERPRINT, BOOT, NOW - 100, {"torch_stack_versions": {"torch": "2.13.0"}}
    )
    built.update(changes)
    return built


# --- the node's texts ------------------------------------------------------------------------------------------


def test_boot_id_is_read_and_junk_refused():
    assert ns.parse_boot_id(BOOT.upper() + "\n") == BOOT
    with pytest.raises(ns.StampError, match="boot_id"):
        ns.parse_boot_id("not a boot id\n")


def test_amx_fingerprint_keeps_what_decides_amx():
    facts = {key: key for key in ns.AMX_KEYS}
    facts.update(sources=["/proc/cpuinfo"], warnings=["x"], numa_nodes=[])
    assert ns.amx_fingerprint(facts) == {key: key for key in ns.AMX_KEYS}


@pytest.mark.parametrize(
    ("probe", "error"),
    [
        ({"packages": "git"}, "probe.packages must be a list"),
        ({"files": ["hosts"]}, "not absolute"),
        ({"venv": "venv"}, "not absolute"),
        ({"amx": "yes"}, "probe.amx must be true or false"),
        ({"disk": "/"}, "unknown probe keys disk"),
        ("packages", "the probe must be a dict"),
        ({"stamps": ["tcmalloc"]}, "probe.stamps must be a dict"),
        ({"stamps": {"../x": {"inputs_hash": "a" * 64}}}, "'../x' is not a role name"),
        ({"stamps": {"tcmalloc": {}}}, "must hold exactly inputs_hash"),
        ({"stamps": {"tcmalloc": {"inputs_hash": "a" * 64, "max_age": 1}}}, "exactly inputs_hash"),
        ({"stamps": {"tcmalloc": {"inputs_hash": "abc"}}}, "inputs_hash must be a sha256"),
    ],
)
def test_bad_probe_is_refused(probe, error):
    with pytest.raises(ns.StampError, match=error):
        ns.check_probe(probe)


def test_named_stamps_are_kept_sorted_and_each_unheld_one_is_said_with_its_reason():
    want = {"inputs_hash": "b" * 64}
    assert list(ns.check_probe({"stamps": {"torch_stack": want, "amx_check": want}})["stamps"]) == [
        "amx_check",
        "torch_stack",
    ]
    assert ns.check_probe({})["stamps"] == {}
    live = {
        "tcmalloc": {"holds": True, "digest": "d"},
        "torch_stack": {"holds": False, "reason": "the node rebooted since the stamp was written"},
        "amx_check": "damaged",
    }
    assert np.unheld_stamps(live) == [
        "the stamp of amx_check does not hold (no reason given)",
        "the stamp of torch_stack does not hold (the node rebooted since the stamp was written)",
    ]


# --- the stamp -------------------------------------------------------------------------------------------------


def test_the_probe_spec_is_node_probes():
    spec = ns.probe_spec(ns.check_probe(PROBE))
    assert spec == {
        "files": sorted(PROBE["files"] + [PROBE["manifest"]]),
        "venv": PROBE["venv"],
        "packages": {"names": PROBE["packages"]},
    }
    assert np.check_spec(spec)["packages"] == {"manager": None, "names": PROBE["packages"]}


def test_a_written_stamp_reads_back():
    written = stamp()
    read = ns.parse_stamp(ns.stamp_text(written), "torch_stack")
    assert read == written
    assert read["probe"]["files"] == sorted(PROBE["files"])


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"format": 1}', "format is not 2"),  # a stamp of the older code: the role runs in full once
        ('{"format": 2, "role": "torch_stack"}', "the stamp lacks"),
    ],
)
def test_unparseable_stamp_is_refused(text, error):
    with pytest.raises(ns.StampError, match=error):
        ns.parse_stamp(text, "torch_stack")


def test_an_edited_stamp_is_refused():
    edited = json.loads(ns.stamp_text(stamp()))
    edited["facts"]["torch_stack_versions"]["torch"] = "2.99.0"
    with pytest.raises(ns.StampError, match="edited"):
        ns.parse_stamp(json.dumps(edited), "torch_stack")
    edited = json.loads(ns.stamp_text(stamp()))
    edited["time"] = NOW  # made younger by hand
    with pytest.raises(ns.StampError, match="edited"):
        ns.parse_stamp(json.dumps(edited), "torch_stack")


def test_the_stamp_of_another_role_is_refused():
    with pytest.raises(ns.StampError, match="of role 'torch_stack', not 'tcmalloc'"):
        ns.parse_stamp(ns.stamp_text(stamp()), "tcmalloc")


def test_the_error_never_shows_the_stamp_contents():
    secret = json.loads(ns.stamp_text(stamp()))
    secret["facts"]["token"] = "s3cr3t-value"
    with pytest.raises(ns.StampError) as caught:
        ns.parse_stamp(json.dumps(secret), "torch_stack")
    assert "s3cr3t" not in str(caught.value)


def test_same_record_ignores_the_time_only():
    assert ns.same_record(
        stamp(), ns.build_stamp("torch_stack", INPUTS, PROBE, FINGERPRINT, BOOT, NOW, stamp()["facts"])
    )
    assert not ns.same_record(stamp(), stamp(boot_id="1" * 32))


# --- the controller's inputs hash ------------------------------------------------------------------------------


def test_inputs_hash_follows_each_input():
    files = {"tcmalloc/tasks/main.yml": "1" * 64}
    base = ns.inputs_hash("0.2.0", files, {"tcmalloc_install": True})
    assert base == ns.inputs_hash("0.2.0", dict(files), {"tcmalloc_install": True})
    assert base != ns.inputs_hash("0.2.1", files, {"tcmalloc_install": True})
    assert base != ns.inputs_hash("0.2.0", {"tcmalloc/tasks/main.yml": "2" * 64}, {"tcmalloc_install": True})
    assert base != ns.inputs_hash("0.2.0", files, {"tcmalloc_install": False})
    with pytest.raises(ns.StampError, match="collection version is empty"):
        ns.inputs_hash("", files, {})
    with pytest.raises(ns.StampError, match="must be a dict"):
        ns.inputs_hash("0.2.0", files, ["tcmalloc_install"])


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("namespace: amx\nname: cluster\nversion: 0.2.0\n", "0.2.0"),
        ("version: '1.0.0-beta.1'  # next\n", "1.0.0-beta.1"),
        ("dependencies:\n  version: 9\n", ""),  # not a top-level key
    ],
)
def test_version_from_galaxy(text, version):
    assert ns.version_from_galaxy(text) == version
