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
    return tmp / "f", sha(b"key one\n")


def _symlink(tmp):
    (tmp / "target").write_bytes(b"hosts\n")
    (tmp / "link").symlink_to(tmp / "target")
    return tmp / "link", sha(b"hosts\n")


def _dangling(tmp):
    (tmp / "dangling").symlink_to(tmp / "nothing")
    return tmp / "dangling", None


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(_regular, id="regular file: its sha256"),
        pytest.param(_symlink, id="symlink: the target's sha256"),
        pytest.param(lambda tmp: (tmp / "missing", None), id="absent: None"),
        pytest.param(_dangling, id="dangling symlink: None"),
        pytest.param(lambda tmp: (_regular(tmp)[0] / "below", None), id="below a file: None"),
        pytest.param(lambda tmp: (tmp, np.UNREADABLE), id="a folder: unreadable"),
        pytest.param(lambda tmp: (pathlib.Path("/dev/null"), np.UNREADABLE), id="a device: unreadable"),
    ],
)
def test_files(tmp_path, make):
    path, expected = make(tmp_path)
    assert np.probe({"files": [str(path)]})["files"] == {str(path): expected}


def test_a_fifo_is_unreadable_and_does_not_block(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    # In a process of its own: were the probe to block on the FIFO, the time-out fails the test instead.
    done = run_probe("stdin", [json.dumps({"files": [str(tmp_path / "fifo")]})], tmp_path, timeout=60)
    assert json.loads(done.stdout)["result"]["files"] == {str(tmp_path / "fifo"): np.UNREADABLE}


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
        assert np.differences(before, after) == [f"the tree {top} changed"]
    else:
        assert np.differences(before, after) == []


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
    assert found == {str(top): np.UNREADABLE}
    # Unreadable then and now is no proof that nothing changed.
    before = after = np.probe({"trees": [str(top)]})
    assert np.differences(before, after) == [f"the tree {top} cannot be read now"]


def test_tree_absent_or_not_a_folder(tmp_path):
    (tmp_path / "file").write_text("x")
    spec = {"trees": [str(tmp_path / "missing"), str(tmp_path / "file")]}
    assert np.probe(spec)["trees"] == {str(tmp_path / "missing"): None, str(tmp_path / "file"): np.UNREADABLE}


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
        "pyvenv_cfg": sha(b"home = /usr/bin\n"),
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


@pytest.mark.parametrize("manager", ["dpkg", "rpm"])
def test_a_manager_missing_from_path_gives_none_for_every_name(tmp_path, monkeypatch, manager):
    # A real PATH without the manager's program (an empty folder), not a mock.
    monkeypatch.setenv("PATH", str(tmp_path))
    result = np.probe({"packages": {"manager": manager, "names": ["bash", "libc6"]}})
    assert result["packages"] == {"bash": None, "libc6": None}


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
        ({"packages": {"names": ["bash"]}}, "spec.packages.manager must be dpkg or rpm, not None"),
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
    assert node_state.package_query_argv is np.package_query_argv


# ---------------------------------------------------------------------------------------------------------------
# fingerprint and differences
# ---------------------------------------------------------------------------------------------------------------

RECORDED = {
    "boot_id": "0f6c2d2e-3c1b-4a57-9a4e-8e2f5b8f7b10",
    "kernel": "5.15.0-1",
    "python": "3.11.2",
    "files": {"/home/u/.ssh/config": HASH, "/home/u/hosts": HASH, "/home/u/new": None},
    "trees": {"/data/x": HASH, "/data/y": None},
    "venv": {
        "path": "/opt/v",
        "pyvenv_cfg": HASH,
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
        {"files__/home/u/hosts": HASH},
    ],
    ids=["present", "processes", "disk_free", "nothing"],
)
def test_what_is_not_compared_makes_no_difference(changed):
    assert np.differences(RECORDED, live(**changed)) == []


def venv_with(distributions, path="/opt/v"):
    return {"path": path, "pyvenv_cfg": HASH, "distributions": distributions}


CHANGES = [
    ({"boot_id": "1" * 36}, ["the node rebooted (another boot id)"]),
    ({"boot_id": ""}, ["the node's boot id cannot be read"]),
    ({"kernel": "6.1.0-2"}, ["the kernel (5.15.0-1 -> 6.1.0-2)"]),
    ({"python": "3.11.4"}, ["the Python (3.11.2 -> 3.11.4)"]),
    ({"files__/home/u/.ssh/config": OTHER}, ["/home/u/.ssh/config changed"]),
    ({"files__/home/u/new": OTHER}, ["/home/u/new appeared"]),
    ({"files__/home/u/hosts": None}, ["/home/u/hosts is gone"]),
    ({"files__/home/u/hosts": "unreadable"}, ["/home/u/hosts cannot be read now"]),
    ({"files__/home/u/hosts": KeyError}, ["/home/u/hosts is not probed now"]),
    ({"files__/home/u/other": None}, ["/home/u/other was not probed when the launch was recorded"]),
    ({"trees__/data/x": OTHER}, ["the tree /data/x changed"]),
    ({"trees__/data/y": OTHER}, ["the tree /data/y appeared"]),
    ({"trees__/data/x": None}, ["the tree /data/x is gone"]),
    (
        {"venv__distributions": {"foo": "1.0", "baz": "1.1", "torch": "2.13.0+cpu"}},
        ["the virtualenv /opt/v: added foo 1.0; removed bar 2.0; baz 1.0 -> 1.1"],
    ),
    ({"venv__pyvenv_cfg": OTHER}, ["the virtualenv /opt/v: pyvenv.cfg changed"]),
    (
        {"venv__distributions": {f"d{n}": "1" for n in range(7)}},
        ["the virtualenv /opt/v: added d0 1; added d1 1; added d2 1; added d3 1; added d4 1; and 5 more"],
    ),
    ({"venv": None}, ["the virtualenv /opt/v is gone"]),
    (
        {"venv": venv_with(RECORDED["venv"]["distributions"], "/opt/w")},
        ["the virtualenv /opt/v -> /opt/w"],
    ),
    ({"packages__libgoogle-perftools-dev": "2.11-1"}, ["package libgoogle-perftools-dev 2.10-1 -> 2.11-1"]),
    ({"packages__git": "1:2.39.5-0"}, ["package git is installed now (1:2.39.5-0)"]),
    ({"packages__python3-venv": None}, ["package python3-venv is no longer installed (it was 3.11.2-1)"]),
    ({"packages__python3-venv": KeyError}, ["package python3-venv is not probed now"]),
    ({"packages__acl": None}, ["package acl was not probed when the launch was recorded"]),
    (
        {"kernel": "6.1.0-2", "files__/home/u/hosts": None, "packages__git": "2"},
        ["the kernel (5.15.0-1 -> 6.1.0-2)", "/home/u/hosts is gone", "package git is installed now (2)"],
    ),
]


@pytest.mark.parametrize(("changed", "sentences"), CHANGES, ids=[case[1][0] for case in CHANGES])
def test_differences_name_what_changed(changed, sentences):
    assert np.differences(RECORDED, live(**changed)) == sentences
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
            ["the virtualenv /opt/v: its distributions cannot be compared (not a dict)"],
        ),
        (RECORDED, live(venv__extra=1), ["the venv differs"]),
    ],
    ids=["record", "live", "files", "packages", "trees", "venv", "distributions", "an unknown key"],
)
def test_a_damaged_record_is_never_unchanged(recorded, live_value, sentences):
    assert np.differences(recorded, live_value) == sentences


def test_a_virtualenv_that_appeared():
    assert np.differences(live(venv=None), RECORDED) == ["the virtualenv /opt/v appeared"]


def test_differences_never_show_a_hash():
    sentences = np.differences(RECORDED, live(**{"files__/home/u/hosts": OTHER, "trees__/data/x": OTHER}))
    assert sentences and not any(HASH in s or OTHER in s for s in sentences)


def test_a_real_change_on_disk_is_named(tmp_path):
    (tmp_path / "config").write_text("Host node1\n")
    venv = _venv(tmp_path)
    spec = {"files": [str(tmp_path / "config")], "venv": str(venv)}
    recorded = np.fingerprint(np.probe(spec))
    assert np.differences(recorded, np.probe(spec)) == []
    (tmp_path / "config").write_text("Host node2\n")
    (venv / "lib" / "python3.11" / "site-packages" / "torch-2.13.0+cpu.dist-info").rename(
        venv / "lib" / "python3.11" / "site-packages" / "torch-2.14.0+cpu.dist-info"
    )
    assert np.differences(recorded, np.probe(spec)) == [
        f"{tmp_path / 'config'} changed",
        f"the virtualenv {venv}: torch 2.13.0+cpu -> 2.14.0+cpu",
    ]


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
    assert answer["result"]["files"] == {str(tmp_path / "hosts"): sha(b"localhost\n")}
    assert answer["result"]["present"] == [str(tmp_path)]
    assert np.differences(answer["result"], np.probe(spec)) == []


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
    unread = live(**{"files__/home/u/hosts": np.UNREADABLE})
    assert np.differences(unread, unread) == ["/home/u/hosts cannot be read now"]
    venv = live(venv__pyvenv_cfg=np.UNREADABLE)
    assert np.differences(venv, venv) == ["the virtualenv /opt/v: pyvenv.cfg cannot be read now"]
