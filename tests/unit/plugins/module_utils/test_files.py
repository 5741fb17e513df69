# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""write_atomically: the whole file with its mode, or the old one and no temporary file left; read_root_record:
only a regular file of root's with mode 0600."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.amx.cluster.plugins.module_utils import files


@pytest.mark.parametrize("content", ["text\n", b"\x00bytes"])
def test_writes_the_content_with_its_mode_and_leaves_nothing_else(tmp_path, content):
    target = tmp_path / "record.json"
    target.write_text("old")
    files.write_atomically(str(target), content, mode=0o640)
    expected = content.encode() if isinstance(content, str) else content
    assert target.read_bytes() == expected
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert os.listdir(tmp_path) == ["record.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary_one(tmp_path, monkeypatch):
    target = tmp_path / "record.json"
    target.write_text("old")

    def fail(*_args, **_kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        files.write_atomically(str(target), "new")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["record.json"]


@pytest.mark.skipif(os.geteuid() != 0, reason="a record of root's is read as root")
def test_read_root_record_trusts_only_roots_0600_regular_files(tmp_path):
    record = tmp_path / "record.json"
    record.write_text('{"secret": 1}')
    os.chmod(record, 0o600)
    assert files.read_root_record(str(record)) == ('{"secret": 1}', "")
    (tmp_path / "link").symlink_to(record)
    assert files.read_root_record(str(tmp_path / "link"))[1].startswith("cannot be opened (OSError")
    assert files.read_root_record(str(tmp_path / "absent")) == (None, files.ABSENT)
    os.chmod(record, 0o644)
    assert files.read_root_record(str(record)) == (None, "is not a file of root's with mode 0600")
    record.write_bytes(b"\xff\xfe")
    os.chmod(record, 0o600)
    assert files.read_root_record(str(record)) == (None, "is not text")
    # What the file holds never goes into the reason.
    assert all("secret" not in (files.read_root_record(str(path))[1]) for path in (record, tmp_path / "link"))
