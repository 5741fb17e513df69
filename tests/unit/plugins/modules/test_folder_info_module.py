# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""amx.cluster.folder_info run for real (`ansible localhost -m amx.cluster.folder_info`, as root), its answers
compared with what `test -w` says when the user runs it (runuser), the way the roles asked before."""

from __future__ import annotations

import json
import os
import pathlib
import pwd
import shutil
import subprocess
import tempfile

import pytest
from ad_hoc import run_module

from ansible_collections.amx.cluster.plugins.modules.folder_info import folder_facts

USER = "nobody"
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("runuser"), reason="asks as another user: needs root and runuser"
)


def test_as_user(path) -> bool:
    return subprocess.run(["runuser", "-u", USER, "--", "test", "-w", str(path)], check=False).returncode == 0


test_as_user.__test__ = False  # a helper, not a test


@pytest.fixture()
def tree():
    """Folders of every kind the roles meet, under a parent that anyone may enter (pytest's tmp_path is root's
    alone)."""
    tmp_path = pathlib.Path(tempfile.mkdtemp(prefix="folder-info-"))
    os.chmod(tmp_path, 0o755)
    nobody = pwd.getpwnam(USER)
    (tmp_path / "roots").mkdir(mode=0o755)  # root's, others may read but not write
    (tmp_path / "open").mkdir()
    os.chmod(tmp_path / "open", 0o777)
    (tmp_path / "closed").mkdir(mode=0o700)  # root's alone: nobody may not even enter it
    (tmp_path / "closed" / "open").mkdir()
    os.chmod(tmp_path / "closed" / "open", 0o777)
    (tmp_path / "nobodys").mkdir(mode=0o700)
    os.chown(tmp_path / "nobodys", nobody.pw_uid, nobody.pw_gid)
    (tmp_path / "a-file").write_text("not a folder\n")
    (tmp_path / "to-usr").symlink_to("/usr")
    (tmp_path / "to-open").symlink_to(tmp_path / "open")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    yield tmp_path
    shutil.rmtree(tmp_path)


NAMES = ["roots", "open", "closed", "closed/open", "nobodys", "a-file", "to-usr", "to-open", "dangling", "absent"]


@pytest.mark.parametrize("check", [False, True])
def test_each_path_is_described_and_its_writability_is_what_the_user_finds(tree, check):
    paths = [str(tree / name) for name in NAMES] + [str(tree / "a-file" / "below")]
    result = run_module("folder_info", json.dumps({"paths": paths, "user": USER}), check=check)
    assert not result.get("failed"), result.get("msg")
    assert result["changed"] is False
    found = {entry["path"]: entry for entry in result["folders"]}
    assert [entry["path"] for entry in result["folders"]] == paths

    for path in paths:
        entry = found[path]
        assert entry["exists"] == os.path.lexists(path), path
        assert entry["isdir"] == os.path.isdir(path), path
        assert entry["islnk"] == os.path.islink(path), path
        assert entry["lnk_source"] == (os.path.realpath(path) if os.path.islink(path) else None), path
        expected = test_as_user(path) if entry["exists"] else None
        assert entry["writable"] is expected, f"{path}: test -w as {USER} says {expected}"
    # The answers that matter, spelled out, so that the oracle above cannot agree with a wrong module by accident.
    writable = {name: found[str(tree / name)]["writable"] for name in NAMES}
    assert writable == {
        "roots": False,
        "open": True,
        "closed": False,
        "closed/open": False,
        "nobodys": True,
        "a-file": False,
        "to-usr": False,
        "to-open": True,
        "dangling": False,
        "absent": None,
    }
    assert found[str(tree / "to-usr")]["lnk_source"] == os.path.realpath("/usr")


def test_a_user_the_node_does_not_have_gives_no_answer_and_no_error(tree):
    paths = [str(tree / "open"), str(tree / "absent")]
    result = run_module("folder_info", json.dumps({"paths": paths, "user": "no-such-user-here"}))
    assert not result.get("failed"), result.get("msg")
    assert [entry["writable"] for entry in result["folders"]] == [None, None]
    assert [entry["exists"] for entry in result["folders"]] == [True, False]


def test_a_relative_path_is_refused_by_name():
    result = run_module("folder_info", json.dumps({"paths": ["/tmp", "runs/here"], "user": USER}))
    assert result.get("failed")
    assert result["msg"] == "folder_info needs absolute paths, got 'runs/here'"


def as_nobody(function, *args):
    """``function(*args)`` in a child process with nobody's ids (the module without root), its value or its
    exception's text back through a pipe."""
    account = pwd.getpwnam(USER)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.setgroups([])
            os.setgid(account.pw_gid)
            os.setuid(account.pw_uid)
            try:
                answer = {"value": function(*args)}
            except Exception as error:  # pylint: disable=broad-except  # any error is the answer
                answer = {"error": f"{type(error).__name__}: {error}"}
            os.write(write_end, json.dumps(answer).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        text = pipe.read()
    assert os.waitpid(pid, 0)[1] == 0
    return json.loads(text)


def test_without_root_it_answers_for_its_own_user_and_refuses_another(tree):
    paths = [str(tree / "open"), str(tree / "roots"), str(tree / "nobodys")]
    answer = as_nobody(folder_facts, paths, USER)
    assert [entry["writable"] for entry in answer["value"]] == [True, False, True]
    answer = as_nobody(folder_facts, paths, "root")
    assert answer["error"].startswith("PermissionError: folder_info runs as uid "), answer
    assert answer["error"].endswith("cannot ask what root may write: run it as root or with become: true"), answer
