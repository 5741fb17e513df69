# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node probe on this machine's real files, packages and processes, and the sentences that name a change."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from ansible_collections.amx.cluster.plugins.module_utils import node_probe as np
from ansible_collections.amx.cluster.plugins.module_utils import node_state

SOURCE = pathlib.Path(np.__file__)
HASH = "a" * 64
OTHER = "b" * 64


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------------------------------------------
# The file itself: one self-contained file for the nodes' system Python
# ---------------------------------------------------------------------------------------------------------------


def test_imports_only_the_standard_library():
    tree = ast.parse(SOURCE.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported


def test_parses_as_python_3_8():
    ast.parse(SOURCE.read_text(), feature_version=(3, 8))


# ---------------------------------------------------------------------------------------------------------------
# files, trees, venv, absent, disk
# ---------------------------------------------------------------------------------------------------------------


def _regular(tmp):
    (tmp / "f").write_bytes(b"key one\n")
    os.chmod(tmp / "f", 0o640)
    return tmp / "f", {"sha256": sha(b"key one\n"), "mode": "0640", "uid": os.getuid()}


def _symlink(tmp):
    (tmp / "target").write_bytes(b"hosts\n")
    (tmp / "link").symlink_to(tmp / "target")
    return tmp / "link", {"link": str(tmp / "target")}


def _dangling(tmp):
    (tmp / "dangling").symlink_to(tmp / "nothing")
    return tmp / "dangling", {"link": str(tmp / "nothing")}


NOT_REGULAR = {np.UNREADABLE: "not a regular file"}


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(_regular, id="regular file: its sha256, mode and owner"),
        pytest.param(_symlink, id="symlink: its target's path, never the file behind it"),
        pytest.param(lambda tmp: (tmp / "missing", None), id="absent: None"),
        pytest.param(_dangling, id="dangling symlink: its target's path"),
        pytest.param(lambda tmp: (_regular(tmp)[0] / "below", None), id="below a file: None"),
        pytest.param(lambda tmp: (tmp, NOT_REGULAR), id="a folder: unreadable"),
        pytest.param(lambda tmp: (pathlib.Path("/dev/null"), NOT_REGULAR), id="a device: unreadable"),
    ],
)
def test_files(tmp_path, make):
    path, expected = make(tmp_path)
    assert np.probe({"files": [str(path)]})["files"] == {str(path): expected}


def test_a_fifo_is_unreadable_and_does_not_block(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    # In a process of its own: were the probe to block on the FIFO, the time-out fails the test instead.
    done = run_probe("stdin", [json.dumps({"files": [str(tmp_path / "fifo")]})], tmp_path, timeout=60)
    assert json.loads(done.stdout)["result"]["files"] == {str(tmp_path / "fifo"): NOT_REGULAR}


def _tree(tmp):
    top = tmp / "data"
    (top / "sub").mkdir(parents=True)
    (top / "a.json").write_text("{}\n")
    (top / "sub" / "b.txt").write_text("bee\n")
    os.utime(top / "a.json", ns=(1_000_000_000_000_000_000, 1_700_000_000_123_456_789))
    (top / "sub" / "link").symlink_to("../a.json")
    outside = tmp / "outside"
    outside.mkdir()
    (outside / "c").write_text("sea\n")
    (top / "linked_dir").symlink_to(outside)
    return top


def test_tree_hash_is_over_the_sorted_lines_of_its_files(tmp_path):
    top = _tree(tmp_path)
    b = os.stat(top / "sub" / "b.txt")
    lines = [
        "a.json\t3\t1700000000123456789",
        f"linked_dir\t->{tmp_path / 'outside'}\tdir",
        f"sub/b.txt\t{b.st_size}\t{b.st_mtime_ns}",
        # A link: its target's size and time (through stat), never its contents.
        "sub/link\t->../a.json\t3\t1700000000123456789",
    ]
    expected = sha("".join(line + "\n" for line in sorted(lines)).encode())
    assert np.probe({"trees": [str(top)]})["trees"] == {str(top): expected}


@pytest.mark.parametrize(
    ("change", "differs"),
    [
        (lambda top, tmp: os.utime(top / "a.json", ns=(1, 1_700_000_000_999_999_999)), True),
        (lambda top, tmp: (top / "sub" / "b.txt").write_text("bees\n"), True),
        (lambda top, tmp: (top / "sub" / "new").write_text(""), True),
        (lambda top, tmp: (top / "sub" / "b.txt").unlink(), True),
        (lambda top, tmp: (top / "sub" / "b.txt").rename(top / "sub" / "c.txt"), True),
        (lambda top, tmp: ((top / "sub" / "link").unlink(), (top / "sub" / "link").symlink_to("b.txt")), True),
        # Not followed: what a symlinked folder holds is not the tree's.
        (lambda top, tmp: (tmp / "outside" / "c").write_text("another sea\n"), False),
        # Reading a file changes nothing; neither does an empty folder (only files count).
        (lambda top, tmp: (top / "a.json").read_text(), False),
        (lambda top, tmp: (top / "empty").mkdir(), False),
    ],
    ids=[
        "mtime",
        "size",
        "added file",
        "removed file",
        "renamed file",
        "symlink target",
        "symlinked folder's contents",
        "a read",
        "an empty folder",
    ],
)
def test_tree_changes(tmp_path, change, differs):
    top = _tree(tmp_path)
    before = np.probe({"trees": [str(top)]})
    change(top, tmp_path)
    after = np.probe({"trees": [str(top)]})
    assert (before["trees"] != after["trees"]) is differs
    if differs:
        assert np.differences(np.fingerprint(before), np.fingerprint(after)) == [f"trees: {top} changed"]
    else:
        assert np.differences(np.fingerprint(before), np.fingerprint(after)) == []


@pytest.mark.parametrize(
    "plant",
    [
        lambda top: os.mkfifo(top / "sub" / "fifo"),
        lambda top: (top / "sub" / "dangling").symlink_to("nowhere"),
        lambda top: (top / "sub" / "to-fifo").symlink_to(top.parent / "outside-fifo"),
    ],
    ids=["a FIFO", "a dangling link", "a link to a FIFO"],
)
def test_a_tree_with_what_cannot_be_fingerprinted_is_unreadable_and_always_a_change(tmp_path, plant):
    top = _tree(tmp_path)
    os.mkfifo(tmp_path / "outside-fifo")
    plant(top)
    # In a child with a deadline: a FIFO is never opened, so nothing waits on a writer.
    done = run_probe("stdin", [json.dumps({"trees": [str(top)]})], tmp_path, timeout=60)
    found = json.loads(done.stdout)["result"]["trees"]
    assert found == {str(top): TREE_UNREADABLE}
    # Unreadable then and now is no proof that nothing changed.
    before = after = np.fingerprint(np.probe({"trees": [str(top)]}))
    why = TREE_UNREADABLE[np.UNREADABLE]
    assert np.differences(before, after) == [f"trees: {top} cannot be read ({why})"]


TREE_UNREADABLE = {np.UNREADABLE: "it holds an entry that cannot be fingerprinted"}


def test_tree_absent_or_not_a_folder(tmp_path):
    (tmp_path / "file").write_text("x")
    spec = {"trees": [str(tmp_path / "missing"), str(tmp_path / "file")]}
    assert np.probe(spec)["trees"] == {
        str(tmp_path / "missing"): None,
        str(tmp_path / "file"): {np.UNREADABLE: "not a folder"},
    }


def test_tree_non_utf8_names_are_hashed(tmp_path):
    top = tmp_path / "t"
    top.mkdir()
    (pathlib.Path(os.fsdecode(bytes(top) + b"/\xff.bin"))).write_bytes(b"x")
    assert len(np.probe({"trees": [str(top)]})["trees"][str(top)]) == 64


def _venv(tmp, name="venv"):
    venv = tmp / name
    site = venv / "lib" / "python3.11" / "site-packages"
    for folder in ("torch-2.13.0+cpu.dist-info", "Jinja2-3.1.4.dist-info", "torch", "__pycache__"):
        (site / folder).mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    return venv


@pytest.mark.parametrize("name", ["venv", "odd [name] *"])
def test_venv(tmp_path, name):
    venv = _venv(tmp_path, name)
    assert np.probe({"venv": str(venv)})["venv"] == {
        "path": str(venv),
        "pyvenv_cfg": {"sha256": sha(b"home = /usr/bin\n"), "mode": "0644", "uid": os.getuid()},
        "distributions": {"torch": "2.13.0+cpu", "jinja2": "3.1.4"},
    }
    (venv / "pyvenv.cfg").unlink()
    assert np.probe({"venv": str(venv)})["venv"]["pyvenv_cfg"] is None


@pytest.mark.parametrize("venv", ["", "/nonexistent/amx-cluster-venv"])
def test_no_venv_is_none(venv):
    assert np.probe({"venv": venv})["venv"] is None


def test_dist_info_names_are_the_folder_names_sorted(tmp_path):
    assert np.dist_info_names(str(_venv(tmp_path))) == ["Jinja2-3.1.4.dist-info", "torch-2.13.0+cpu.dist-info"]
    assert np.dist_info_names(str(tmp_path / "none")) == []


def test_absent_paths_that_exist_are_present(tmp_path):
    (tmp_path / "run-1").mkdir()
    (tmp_path / "dangling").symlink_to(tmp_path / "nothing")
    paths = [str(tmp_path / name) for name in ("run-2", "run-1", "dangling", "run-1")]
    assert np.probe({"absent": paths})["present"] == sorted([str(tmp_path / "dangling"), str(tmp_path / "run-1")])
    assert np.probe({"absent": [str(tmp_path / "run-2")]})["present"] == []


def test_disk_free(tmp_path):
    info = os.statvfs(tmp_path)
    free = np.probe({"disk": str(tmp_path)})["disk_free"]
    assert isinstance(free, int)
    # The same file system a moment later: within 64 MiB of what statvfs said.
    assert abs(free - info.f_bavail * info.f_frsize) < 64 << 20
    assert np.probe({"disk": str(tmp_path / "missing")})["disk_free"] is None


def test_always_in_the_result():
    result = np.probe({})
    with open("/proc/sys/kernel/random/boot_id") as handle:
        assert result["boot_id"] == handle.read().strip()
    assert result["kernel"] == os.uname().release
    assert result["python"] == sys.version.split()[0]
    assert result == {
        **result,
        "files": {},
        "trees": {},
        "venv": None,
        "packages": {},
        "present": [],
        "processes": [],
        "disk_free": None,
    }


# ---------------------------------------------------------------------------------------------------------------
# packages
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="no dpkg-query: not a Debian-family machine")
def test_dpkg_packages():
    version = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", "bash"], capture_output=True, text=True, check=True
    ).stdout
    names = ["bash", "amx-cluster-no-such-package"]
    assert np.probe({"packages": {"manager": "dpkg", "names": names}})["packages"] == {
        "bash": version,
        "amx-cluster-no-such-package": None,
    }


@pytest.mark.parametrize("manager", ["dpkg", "rpm", None])
def test_no_package_manager_is_unreadable_for_every_name(tmp_path, monkeypatch, manager):
    # A real PATH without the manager's program (an empty folder), not a mock: never taken as "not installed".
    monkeypatch.setenv("PATH", str(tmp_path))
    result = np.probe({"packages": {"manager": manager, "names": ["bash", "libc6"]}})
    unread = {np.UNREADABLE: "no package manager"}
    assert result["packages"] == {"bash": unread, "libc6": unread}


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="no dpkg-query: not a Debian-family machine")
def test_without_a_manager_the_one_on_path_answers():
    assert np.probe({"packages": {"names": ["bash"]}})["packages"]["bash"]


def test_no_names_asks_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert np.probe({"packages": {"manager": "dpkg", "names": []}})["packages"] == {}


# ---------------------------------------------------------------------------------------------------------------
# processes
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture
def child():
    """A real process of this test's user, whose command line holds a marker no other process has."""
    marker = f"amx-probe-{uuid.uuid4().hex}"
    script = "import time; time.sleep(120)"
    process = subprocess.Popen([sys.executable, "-c", script, marker, "x" * 400])
    wait_for_cmdline(process.pid, marker)
    yield process, marker, f"{sys.executable} -c {script} {marker} {'x' * 400}"
    process.kill()
    process.wait()


def wait_for_cmdline(pid, marker, timeout=10.0):
    """Until /proc shows the new process's arguments: on a loaded machine its cmdline can still read empty just after
    Popen returns."""
    deadline = time.monotonic() + timeout
    while marker.encode() not in pathlib.Path(f"/proc/{pid}/cmdline").read_bytes():
        assert time.monotonic() < deadline, f"process {pid} shows no {marker} in /proc after {timeout} s"
        time.sleep(0.01)


def test_processes_finds_the_child_by_uid_and_prefix(child):
    process, marker, cmdline = child
    found = np.probe({"processes": {"user": os.getuid(), "prefix": marker}})["processes"]
    # NUL between the arguments read as a space, cut at 300 characters.
    assert found == [f"{process.pid} {cmdline[:300]}"]
    assert np.probe({"processes": {"user": os.getuid() + 4242, "prefix": marker}})["processes"] == []
    assert np.probe({"processes": {"user": os.getuid(), "prefix": marker + "-other"}})["processes"] == []


def test_text_that_only_holds_the_prefix_is_no_process_of_a_run(child):
    """An ssh command line that carries a probe's spec names the run's folder inside one argument: not a run."""
    process, marker, _cmdline = child
    sibling = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "{'absent': ['" + marker + "']}"])
    try:
        wait_for_cmdline(sibling.pid, marker)
        found = np.probe({"processes": {"user": os.getuid(), "prefix": marker}})["processes"]
        assert [line.split()[0] for line in found] == [str(process.pid)]
    finally:
        sibling.kill()
        sibling.wait()


def test_processes_skip_the_probe_and_its_parents(child, tmp_path):
    """The probe's own command line and its shell's hold the spec: they are not leftovers."""
    process, marker, _cmdline = child
    spec = json.dumps({"processes": {"user": os.getuid(), "prefix": marker}})
    # `; true` keeps the shell alive as the probe's parent, its arguments holding the spec.
    done = subprocess.run(
        ["sh", "-c", f'{sys.executable} - "$1" < "$2"; true', "sh", spec, str(SOURCE)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    found = json.loads(done.stdout)["result"]["processes"]
    assert [line.split()[0] for line in found] == [str(process.pid)]


# ---------------------------------------------------------------------------------------------------------------
# The spec
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ([], "the spec must be a dict, not list"),
        ({"file": []}, r"unknown spec keys file \(known: files, trees"),
        ({"files": "/etc/hosts"}, "spec.files must be a list of absolute paths, not str"),
        ({"files": ["hosts"]}, "spec.files: 'hosts' is not an absolute path"),
        ({"trees": [1]}, "spec.trees must hold absolute paths, not int"),
        ({"absent": ["run/1"]}, "spec.absent: 'run/1' is not an absolute path"),
        ({"venv": "venv"}, "spec.venv: 'venv' is not an absolute path"),
        ({"venv": None}, "spec.venv must hold absolute paths, not NoneType"),
        ({"packages": ["bash"]}, "spec.packages must be a dict, not list"),
        ({"packages": {"manager": "apk", "names": ["bash"]}}, "spec.packages.manager must be dpkg or rpm, not 'apk'"),
        ({"packages": {"manager": "", "names": ["bash"]}}, "spec.packages.manager must be dpkg or rpm, not ''"),
        ({"packages": {"manager": "dpkg", "names": "bash"}}, "spec.packages.names must be a list of package names"),
        ({"packages": {"manager": "dpkg", "names": [""]}}, "spec.packages.names must be a list of package names"),
        ({"packages": {"manager": "dpkg", "name": []}}, r"unknown keys in spec.packages: name \(known: manager"),
        ({"processes": {"user": "root", "prefix": "x"}}, "spec.processes.user must be a uid"),
        ({"processes": {"user": True, "prefix": "x"}}, "spec.processes.user must be a uid"),
        ({"processes": {"user": -1, "prefix": "x"}}, "spec.processes.user must be a uid"),
        ({"processes": {"user": 0, "prefix": ""}}, "spec.processes.prefix must be the text"),
        ({"processes": {"user": 0}}, "spec.processes.prefix must be the text"),
        ({"processes": {"user": 0, "prefix": "x", "all": 1}}, "unknown keys in spec.processes: all"),
        ({"processes": "run_qa"}, "spec.processes must be a dict, not str"),
        ({"disk": "data"}, "spec.disk: 'data' is not an absolute path"),
        ({"disk": 1}, "spec.disk must hold absolute paths, not int"),
    ],
)
def test_a_wrong_spec_names_its_key(spec, error):
    with pytest.raises(np.ProbeError, match=error):
        np.probe(spec)


def test_probe_error_is_a_value_error_and_node_states_stamp_error():
    from ansible_collections.amx.cluster.plugins.module_utils import node_state

    assert issubclass(np.ProbeError, ValueError)
    assert node_state.StampError is np.ProbeError


# ---------------------------------------------------------------------------------------------------------------
# fingerprint and differences
# ---------------------------------------------------------------------------------------------------------------


def state(digest: str) -> dict:
    return {"sha256": digest, "mode": "0644", "uid": 1000}


RECORDED = {
    "boot_id": "0f6c2d2e-3c1b-4a57-9a4e-8e2f5b8f7b10",
    "kernel": "5.15.0-1",
    "python": "3.11.2",
    "files": {"/home/u/.ssh/config": state(HASH), "/home/u/hosts": state(HASH), "/home/u/new": None},
    "trees": {"/data/x": HASH, "/data/y": None},
    "venv": {
        "path": "/opt/v",
        "pyvenv_cfg": state(HASH),
        "distributions": {"bar": "2.0", "baz": "1.0", "torch": "2.13.0+cpu"},
    },
    "packages": {"libgoogle-perftools-dev": "2.10-1", "python3-venv": "3.11.2-1", "git": None},
    "present": [],
    "processes": [],
    "disk_free": 10 << 30,
}


def live(**changes):
    value = json.loads(json.dumps(RECORDED))
    for dotted, new in changes.items():
        keys = dotted.split("__")
        target = value
        for key in keys[:-1]:
            target = target[key]
        if new is KeyError:
            del target[keys[-1]]
        else:
            target[keys[-1]] = new
    return value


def test_fingerprint_is_the_compared_part():
    assert np.fingerprint(RECORDED) == {key: RECORDED[key] for key in np.FINGERPRINT_KEYS}
    assert set(np.FINGERPRINT_KEYS) == {"boot_id", "kernel", "python", "files", "trees", "venv", "packages"}


@pytest.mark.parametrize(
    "changed",
    [
        {"present": ["/runs/1"]},
        {"processes": ["12 python3 run_qa.py"]},
        {"disk_free": 1},
        {"files__/home/u/hosts": state(HASH)},
    ],
    ids=["present", "processes", "disk_free", "nothing"],
)
def test_what_is_not_compared_makes_no_difference(changed):
    assert np.differences(np.fingerprint(RECORDED), np.fingerprint(live(**changed))) == []


def venv_with(distributions, path="/opt/v"):
    return {"path": path, "pyvenv_cfg": state(HASH), "distributions": distributions}


CHANGES = [
    ({"boot_id": "1" * 36}, ["boot_id: another boot"]),
    ({"boot_id": ""}, ["boot_id: cannot be read"]),
    ({"kernel": "6.1.0-2"}, ["kernel: 5.15.0-1 -> 6.1.0-2"]),
    ({"python": "3.11.4"}, ["python: 3.11.2 -> 3.11.4"]),
    ({"files__/home/u/.ssh/config": state(OTHER)}, ["files: /home/u/.ssh/config changed"]),
    ({"files__/home/u/.ssh/config__mode": "0666"}, ["files: /home/u/.ssh/config changed"]),  # a loosened key
    ({"files__/home/u/.ssh/config__uid": 0}, ["files: /home/u/.ssh/config changed"]),  # another owner
    ({"files__/home/u/hosts": {"link": "/etc/hosts"}}, ["files: /home/u/hosts changed"]),  # a link in its place
    ({"files__/home/u/new": state(OTHER)}, ["files: /home/u/new appeared"]),
    ({"files__/home/u/hosts": None}, ["files: /home/u/hosts is gone"]),
    (
        {"files__/home/u/hosts": {"unreadable": "PermissionError"}},
        ["files: /home/u/hosts cannot be read (PermissionError)"],
    ),
    ({"files__/home/u/hosts": KeyError}, ["files: /home/u/hosts is not probed now"]),
    ({"files__/home/u/other": None}, ["files: /home/u/other was not probed when the record was written"]),
    ({"trees__/data/x": OTHER}, ["trees: /data/x changed"]),
    ({"trees__/data/y": OTHER}, ["trees: /data/y appeared"]),
    ({"trees__/data/x": None}, ["trees: /data/x is gone"]),
    (
        {"venv__distributions": {"foo": "1.0", "baz": "1.1", "torch": "2.13.0+cpu"}},
        ["venv: /opt/v: added foo 1.0; removed bar 2.0; baz 1.0 -> 1.1"],
    ),
    ({"venv__pyvenv_cfg": state(OTHER)}, ["venv: /opt/v: pyvenv.cfg changed"]),
    (
        {"venv__distributions": {f"d{n}": "1" for n in range(7)}},
        ["venv: /opt/v: added d0 1; added d1 1; added d2 1; added d3 1; added d4 1; and 5 more"],
    ),
    ({"venv": None}, ["venv: /opt/v is gone"]),
    ({"venv": {"unreadable": "not a folder"}}, ["venv: cannot be read (not a folder)"]),
    ({"venv": venv_with(RECORDED["venv"]["distributions"], "/opt/w")}, ["venv: /opt/v -> /opt/w"]),
    ({"packages__libgoogle-perftools-dev": "2.11-1"}, ["packages: libgoogle-perftools-dev 2.10-1 -> 2.11-1"]),
    ({"packages__git": "1:2.39.5-0"}, ["packages: git is installed now (1:2.39.5-0)"]),
    ({"packages__python3-venv": None}, ["packages: python3-venv is no longer installed (it was 3.11.2-1)"]),
    ({"packages__python3-venv": KeyError}, ["packages: python3-venv is not probed now"]),
    ({"packages__acl": None}, ["packages: acl was not probed when the record was written"]),
    (
        {"packages__git": {"unreadable": "no package manager"}},
        ["packages: git cannot be read (no package manager)"],
    ),
    (
        {"kernel": "6.1.0-2", "files__/home/u/hosts": None, "packages__git": "2"},
        ["kernel: 5.15.0-1 -> 6.1.0-2", "files: /home/u/hosts is gone", "packages: git is installed now (2)"],
    ),
]


@pytest.mark.parametrize(("changed", "sentences"), CHANGES, ids=[case[1][0] for case in CHANGES])
def test_differences_name_what_changed(changed, sentences):
    assert np.differences(np.fingerprint(RECORDED), np.fingerprint(live(**changed))) == sentences


@pytest.mark.parametrize(
    ("recorded", "live_value", "sentences"),
    [
        ([], RECORDED, ["the recorded fingerprint cannot be compared (not a dict)"]),
        (RECORDED, None, ["the live fingerprint cannot be compared (not a dict)"]),
        ({**RECORDED, "files": ["/home/u/hosts"]}, RECORDED, ["the recorded files cannot be compared (not a dict)"]),
        ({**RECORDED, "packages": None}, RECORDED, ["the recorded packages cannot be compared (not a dict)"]),
        (RECORDED, {**RECORDED, "trees": "x"}, ["the live trees cannot be compared (not a dict)"]),
        (RECORDED, {**RECORDED, "venv": "/opt/v"}, ["the live venv cannot be compared (not a dict)"]),
        (
            RECORDED,
            live(venv__distributions=["torch"]),
            ["venv: /opt/v: its distributions cannot be compared (not a dict)"],
        ),
        (RECORDED, live(venv__extra=1), ["venv: differs"]),
        (RECORDED, {**RECORDED, "amx": {"amx_usable": True}}, ["amx: amx_usable"]),
    ],
    ids=["record", "live", "files", "packages", "trees", "venv", "distributions", "an unknown key", "a new part"],
)
def test_a_damaged_record_is_never_unchanged(recorded, live_value, sentences):
    assert np.differences(recorded, live_value) == sentences


def test_a_virtualenv_that_appeared():
    assert np.differences(live(venv=None), RECORDED) == ["venv: /opt/v appeared"]


def test_differences_never_show_a_hash():
    sentences = np.differences(RECORDED, live(**{"files__/home/u/hosts": state(OTHER), "trees__/data/x": OTHER}))
    assert sentences and not any(HASH in s or OTHER in s for s in sentences)


def test_a_real_change_on_disk_is_named(tmp_path):
    (tmp_path / "config").write_text("Host node1\n")
    venv = _venv(tmp_path)
    spec = {"files": [str(tmp_path / "config")], "venv": str(venv)}
    recorded = np.fingerprint(np.probe(spec))
    assert np.differences(recorded, np.fingerprint(np.probe(spec))) == []
    (tmp_path / "config").write_text("Host node2\n")
    (venv / "lib" / "python3.11" / "site-packages" / "torch-2.13.0+cpu.dist-info").rename(
        venv / "lib" / "python3.11" / "site-packages" / "torch-2.14.0+cpu.dist-info"
    )
    assert np.differences(recorded, np.fingerprint(np.probe(spec))) == [
        f"files: {tmp_path / 'config'} changed",
        f"venv: {venv}: torch 2.13.0+cpu -> 2.14.0+cpu",
    ]


# ---------------------------------------------------------------------------------------------------------------
# The package query's text and the virtualenv's folder names
# ---------------------------------------------------------------------------------------------------------------


def test_dpkg_query_output():
    out = (
        "libgoogle-perftools-dev\tii \t2.10-1\n"
        "acl\trc \t2.3.1-3\n"  # removed, its configuration left: not installed
        "python3-venv\tii \t3.11.2-1+b1\n"
    )
    assert np.parse_package_versions("dpkg", ["libgoogle-perftools-dev", "acl", "python3-venv", "git"], out) == {
        "libgoogle-perftools-dev": "2.10-1",
        "acl": None,
        "python3-venv": "3.11.2-1+b1",
        "git": None,  # unknown to dpkg: no line at all
    }


def test_rpm_output_with_two_architectures_and_a_missing_package():
    out = "gperftools-libs\t0:2.9.1-3.el9.x86_64\ngperftools-libs\t0:2.9.1-3.el9.i686\npackage acl is not installed\n"
    assert np.parse_package_versions("rpm", ["gperftools-libs", "acl"], out) == {
        "gperftools-libs": "0:2.9.1-3.el9.i686,0:2.9.1-3.el9.x86_64",
        "acl": None,
    }


def test_one_query_command_per_manager():
    assert np.package_query_argv("dpkg", "/usr/bin/dpkg-query", ["a", "b"])[-3:] == ["--", "a", "b"]
    assert np.package_query_argv("rpm", "/usr/bin/rpm", ["a"])[:2] == ["/usr/bin/rpm", "-q"]
    with pytest.raises(np.ProbeError, match="unknown package manager"):
        np.package_query_argv("apk", "/sbin/apk", ["a"])


def test_venv_distributions_from_dist_info_names():
    names = [
        "torch-2.13.0+cpu.dist-info",
        "Jinja2-3.1.4.dist-info",
        "typing_extensions-4.12.2.dist-info",
        "torch",  # the package folder itself
        "__pycache__",
        "oddname.dist-info",  # no version: left out
    ]
    assert np.venv_distributions(names) == {
        "torch": "2.13.0+cpu",
        "jinja2": "3.1.4",
        "typing-extensions": "4.12.2",
    }


# ---------------------------------------------------------------------------------------------------------------
# decide: the one decision over every record (a node role's stamp here, as node_state writes it)
# ---------------------------------------------------------------------------------------------------------------

BOOT = RECORDED["boot_id"]
NOW = 1_800_000_000
INPUTS = "c" * 64
STAMPED = {
    **np.fingerprint(RECORDED),
    "amx": {"amx_usable": True, "kernel_release": "6.8.0", "allowed_cpus": [0, 1, 2]},
}


def stamp(**changes):
    built = node_state.build_stamp("torch_stack", INPUTS, {"files": ["/home/u/hosts"]}, STAMPED, BOOT, NOW - 100)
    built.update(changes)
    return built


def decide(record, live=None, inputs=INPUTS, boot_id=BOOT, now=NOW, force=False):
    return np.decide(record, inputs, STAMPED if live is None else live, boot_id, force, now)


def changed(**changes):
    return {**live(**changes), "amx": STAMPED["amx"]} if changes else STAMPED


def test_match_holds():
    holds, reason = decide(stamp())
    assert (holds, reason) == (True, "the node is as the stamp of 100 s ago found it")


@pytest.mark.parametrize(
    ("live_value", "named"),
    [
        (changed(**{"packages__libgoogle-perftools-dev": "2.10-2"}), "packages: libgoogle-perftools-dev 2.10-1"),
        (changed(packages__git="2"), "packages: git is installed now"),
        (changed(**{"packages__python3-venv": None}), "packages: python3-venv is no longer installed"),
        (changed(venv__distributions__torch="2.14.0"), "venv: /opt/v: torch 2.13.0+cpu -> 2.14.0"),
        (changed(venv__distributions__sklearn="1.5.2"), "venv: /opt/v: added sklearn 1.5.2"),  # pip install by hand
        (changed(**{"files__/home/u/hosts": state(OTHER)}), "files: /home/u/hosts changed"),  # hostfile edited
        (changed(**{"files__/home/u/.ssh/config": None}), "files: /home/u/.ssh/config is gone"),  # SSH file gone
        (changed(**{"files__/home/u/.ssh/config__mode": "0666"}), "files: /home/u/.ssh/config changed"),
        (changed(python="3.11.4"), "python: 3.11.2 -> 3.11.4"),  # the venv's interpreter upgraded in place
        (changed(kernel="6.9.0"), "kernel: 5.15.0-1 -> 6.9.0"),
        ({**STAMPED, "amx": {**STAMPED["amx"], "amx_usable": False}}, "amx: amx_usable"),
        ({**STAMPED, "amx": {**STAMPED["amx"], "kernel_release": "6.9.0"}}, "amx: kernel_release"),
        ({**STAMPED, "amx": {**STAMPED["amx"], "allowed_cpus": [0, 1]}}, "amx: allowed_cpus"),  # another affinity
    ],
)
def test_a_change_the_fingerprint_sees_takes_the_full_path(live_value, named):
    holds, reason = decide(stamp(), live_value)
    assert not holds
    assert reason.startswith("the node changed since the stamp: ") and named in reason, reason


def test_the_change_is_named_not_shown():
    holds, reason = decide(stamp(), changed(**{"files__/home/u/hosts": state(OTHER)}))
    assert not holds and HASH not in reason and OTHER not in reason


def test_a_reboot_or_no_boot_id_takes_the_full_path():
    assert decide(stamp(), boot_id="9" * 32) == (False, "the node rebooted since the stamp was written")
    assert decide(stamp(), boot_id="") == (False, "the node's boot id cannot be read")


@pytest.mark.parametrize("now", [NOW + 2 * 86400, NOW + 400 * 86400, NOW - 3600], ids=["2 days", "400 days", "back"])
def test_no_clock_decides_alone(now):
    """The clock moved (the next day, a year on, set back): a record holds while its fingerprint does."""
    holds, reason = decide(stamp(), now=now)
    assert holds is True, reason
    assert reason.startswith("the node is as the stamp of ")


def test_changed_inputs_take_the_full_path():
    holds, reason = decide(stamp(), inputs="b" * 64)
    assert (holds, reason) == (False, "the role's inputs changed (collection version or code, role files or variables)")


def test_no_stamp_and_a_forced_run_take_the_full_path():
    assert decide(None) == (False, "no stamp of an earlier run")
    assert decide(stamp(), force=True) == (False, "a full run was asked for (node_stamp_force)")
    assert decide(stamp(), live={})[0] is False  # a probe that no longer sees anything


def test_a_node_that_could_not_be_fingerprinted_takes_the_full_path():
    assert np.decide(stamp(), INPUTS, None, BOOT) == (False, "the node could not be fingerprinted")
    unread = changed(**{"files__/home/u/hosts": {np.UNREADABLE: "not a regular file"}})
    # Unreadable then and now: what cannot be read never compares equal to itself.
    record = stamp(fingerprint=unread)
    assert decide(record, unread) == (
        False,
        "the node could not be fingerprinted: files: /home/u/hosts (not a regular file)",
    )


def test_a_record_of_no_one_node_compares_its_inputs_only():
    """The smoke test's record: its inputs are its fingerprint, which holds every node's boot id."""
    record = {"inputs_hash": "a", "fingerprint": {}}
    assert np.decide(record, "a", {}, None) == (True, "the node is as the stamp found it")
    assert np.decide(record, "b", {}, None)[0] is False


# ---------------------------------------------------------------------------------------------------------------
# main, as the master runs it
# ---------------------------------------------------------------------------------------------------------------


def run_probe(how: str, args, cwd, timeout: float = 120) -> subprocess.CompletedProcess:
    """The probe as a real process: as a file, or read from stdin as `ssh node python3 - SPEC < file` does."""
    if how == "file":
        # A copy far from the collection: the file must stand alone.
        copy = pathlib.Path(cwd) / "node_probe.py"
        shutil.copy(SOURCE, copy)
        return subprocess.run(
            [sys.executable, str(copy), *args], capture_output=True, text=True, cwd=cwd, timeout=timeout, check=False
        )
    with open(SOURCE) as source:
        return subprocess.run(
            [sys.executable, "-", *args],
            stdin=source,
            capture_output=True,
            text=True,
            cwd=cwd,
            timeout=timeout,
            check=False,
        )


@pytest.mark.parametrize("how", ["file", "stdin"])
def test_main_answers_in_one_json_line(tmp_path, how):
    (tmp_path / "hosts").write_text("localhost\n")
    spec = {"files": [str(tmp_path / "hosts")], "absent": [str(tmp_path)], "disk": "/"}
    done = run_probe(how, [json.dumps(spec)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.endswith("\n") and done.stdout.count("\n") == 1
    answer = json.loads(done.stdout)
    assert answer["ok"] is True
    assert answer["result"]["files"][str(tmp_path / "hosts")]["sha256"] == sha(b"localhost\n")
    assert answer["result"]["present"] == [str(tmp_path)]
    assert np.differences(np.fingerprint(answer["result"]), np.fingerprint(np.probe(spec))) == []


@pytest.mark.parametrize("how", ["file", "stdin"])
@pytest.mark.parametrize(
    ("args", "error"),
    [
        (['{"files": ["relative"]}'], "spec.files: 'relative' is not an absolute path"),
        (["{not json"], "the spec is not JSON"),
        ([], "give the spec as one JSON argument, not 0 arguments"),
        (["{}", "{}"], "give the spec as one JSON argument, not 2 arguments"),
        (["[]"], "the spec must be a dict, not list"),
    ],
)
def test_main_reports_an_error_with_exit_0(tmp_path, how, args, error):
    done = run_probe(how, args, tmp_path)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["ok"] is False
    assert error in answer["error"]
    assert set(answer) == {"ok", "error"}


def test_main_in_process(capsys):
    assert np.main(["{}"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["ok"] is True and answer["result"]["kernel"] == os.uname().release


def test_a_file_unreadable_then_and_now_is_a_change():
    unread = live(**{"files__/home/u/hosts": {np.UNREADABLE: "not a regular file"}})
    assert np.differences(unread, unread) == ["files: /home/u/hosts cannot be read (not a regular file)"]
    venv = live(venv__pyvenv_cfg={np.UNREADABLE: "PermissionError"})
    assert np.differences(venv, venv) == ["venv: /opt/v: pyvenv.cfg cannot be read (PermissionError)"]
