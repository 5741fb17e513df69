# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""write_atomically: the whole file with its mode, or the old one and no temporary file left."""

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
