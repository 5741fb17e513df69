# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node state stamp's rules: parsing what the node says, the stamp itself, and the decision to skip a role."""

from __future__ import annotations

import copy
import json

import pytest

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
    "packages": {"libgoogle-perftools-dev": "2.10-1", "python3-venv": "3.11.2-1+b1"},
    "venv": {"distributions": {"torch": "2.13.0+cpu", "transformers": "5.24.0"}, "pyvenv_cfg": {"sha256": "c" * 64}},
    "manifest": {"sha256": "d" * 64, "mode": "0644", "uid": 1000},
    "files": {
        "/root/.ssh/id_ed25519": {"sha256": "e" * 64, "mode": "0600", "uid": 0},
        "/root/hosts": {"sha256": "f" * 64, "mode": "0644", "uid": 0},
    },
    "amx": {"amx_usable": True, "amx_reason": "", "kernel_release": "6.8.0", "flags": {"amx_tile": True}},
}


def stamp(**changes):
    built = ns.build_stamp(
        "torch_stack", INPUTS, PROBE, FINGERPRINT, BOOT, NOW - 100, {"torch_stack_versions": {"torch": "2.13.0"}}
    )
    built.update(changes)
    return built


def decide(stamp_value, live=None, **kwargs):
    options = dict(inputs=INPUTS, boot_id=BOOT, now=NOW, force=False)
    options.update(kwargs)
    return ns.decide(
        stamp_value,
        options["inputs"],
        FINGERPRINT if live is None else live,
        options["boot_id"],
        options["now"],
        options["force"],
    )


def changed(path, value):
    """FINGERPRINT with one value changed: path is a list of keys."""
    live = copy.deepcopy(FINGERPRINT)
    target = live
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return live


# --- the node's texts ------------------------------------------------------------------------------------------


def test_boot_id_is_read_and_junk_refused():
    assert ns.parse_boot_id(BOOT.upper() + "\n") == BOOT
    with pytest.raises(ns.StampError, match="boot_id"):
        ns.parse_boot_id("not a boot id\n")


def test_dpkg_query_output():
    out = (
        "libgoogle-perftools-dev\tii \t2.10-1\n"
        "acl\trc \t2.3.1-3\n"  # removed, its configuration left: not installed
        "python3-venv\tii \t3.11.2-1+b1\n"
    )
    assert ns.parse_package_versions("dpkg", ["libgoogle-perftools-dev", "acl", "python3-venv", "git"], out) == {
        "libgoogle-perftools-dev": "2.10-1",
        "acl": None,
        "python3-venv": "3.11.2-1+b1",
        "git": None,  # unknown to dpkg: no line at all
    }


def test_rpm_output_with_two_architectures_and_a_missing_package():
    out = "gperftools-libs\t0:2.9.1-3.el9.x86_64\ngperftools-libs\t0:2.9.1-3.el9.i686\npackage acl is not installed\n"
    assert ns.parse_package_versions("rpm", ["gperftools-libs", "acl"], out) == {
        "gperftools-libs": "0:2.9.1-3.el9.i686,0:2.9.1-3.el9.x86_64",
        "acl": None,
    }


def test_one_query_command_per_manager():
    assert ns.package_query_argv("dpkg", "/usr/bin/dpkg-query", ["a", "b"])[-3:] == ["--", "a", "b"]
    assert ns.package_query_argv("rpm", "/usr/bin/rpm", ["a"])[:2] == ["/usr/bin/rpm", "-q"]
    with pytest.raises(ns.StampError, match="unknown package manager"):
        ns.package_query_argv("apk", "/sbin/apk", ["a"])


def test_venv_distributions_from_dist_info_names():
    names = [
        "torch-2.13.0+cpu.dist-info",
        "Jinja2-3.1.4.dist-info",
        "typing_extensions-4.12.2.dist-info",
        "torch",  # the package folder itself
        "__pycache__",
        "oddname.dist-info",  # no version: left out
    ]
    assert ns.venv_distributions(names) == {
        "torch": "2.13.0+cpu",
        "jinja2": "3.1.4",
        "typing-extensions": "4.12.2",
    }


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
    assert ns.named_stamp_problems(live) == [
        "the stamp of amx_check does not hold (no reason given)",
        "the stamp of torch_stack does not hold (the node rebooted since the stamp was written)",
    ]


# --- the stamp -------------------------------------------------------------------------------------------------


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
        ('{"format": 99}', "format is not 1"),
        ('{"format": 1, "role": "torch_stack"}', "the stamp lacks"),
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


# --- the decision ----------------------------------------------------------------------------------------------


def test_match_skips():
    skip, reason = decide(stamp())
    assert skip, reason
    assert "100 s ago" in reason


@pytest.mark.parametrize(
    ("live", "named"),
    [
        (changed(["packages", "libgoogle-perftools-dev"], "2.10-2"), "packages: libgoogle-perftools-dev"),
        (changed(["packages", "python3-venv"], None), "packages: python3-venv"),  # removed
        (changed(["venv", "distributions", "transformers"], "5.25.0"), "venv: distributions"),
        (changed(["venv", "distributions", "scikit-learn"], "1.5.2"), "venv: distributions"),  # pip install by hand
        (changed(["manifest", "sha256"], "0" * 64), "manifest"),
        (changed(["files", "/root/hosts", "sha256"], "1" * 64), "files: /root/hosts"),  # hostfile edited
        (changed(["files", "/root/.ssh/id_ed25519"], None), "files: /root/.ssh/id_ed25519"),  # SSH key gone
        (changed(["files", "/root/.ssh/id_ed25519", "mode"], "0644"), "files: /root/.ssh/id_ed25519"),
        (changed(["amx", "amx_usable"], False), "amx: amx_usable"),
        (changed(["amx", "kernel_release"], "6.9.0"), "amx: kernel_release"),
        (changed(["amx", "allowed_cpus"], [0, 1]), "amx: allowed_cpus"),  # another CPU affinity
    ],
)
def test_a_change_the_fingerprint_sees_takes_the_full_path(live, named):
    skip, reason = decide(stamp(), live)
    assert not skip
    assert reason.startswith("the node changed since the stamp")
    assert named in reason


def test_the_change_is_named_not_shown():
    skip, reason = decide(stamp(), changed(["files", "/root/hosts", "sha256"], "1" * 64))
    assert not skip
    assert "1111" not in reason and "ffff" not in reason


def test_a_reboot_takes_the_full_path():
    assert decide(stamp(), boot_id="9" * 32) == (False, "the node rebooted since the stamp was written")


@pytest.mark.parametrize("now", [NOW + 2 * 86400, NOW + 400 * 86400, NOW - 3600], ids=["2 days", "400 days", "back"])
def test_no_clock_decides_alone(now):
    """The clock moved (the next day, a year on, set back): a record holds while its fingerprint does."""
    skip, reason = decide(stamp(), now=now)
    assert skip is True, reason
    assert reason.startswith("the node is as the stamp of ")


def test_changed_inputs_take_the_full_path():
    skip, reason = decide(stamp(), inputs="b" * 64)
    assert (skip, reason) == (False, "the role's inputs changed (collection version or code, role files or variables)")


def test_no_stamp_and_a_forced_run_take_the_full_path():
    assert decide(None) == (False, "no stamp of an earlier run")
    assert decide(stamp(), force=True)[0] is False
    assert decide(stamp(), live={})[0] is False  # a probe that no longer sees anything


def test_a_node_that_could_not_be_fingerprinted_takes_the_full_path():
    assert ns.decide(stamp(), INPUTS, None, BOOT, NOW) == (False, "the node could not be fingerprinted")


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
