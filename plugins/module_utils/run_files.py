# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which files of one folder another folder lacks, from the checksums ansible.builtin.find reports on each side."""

from __future__ import annotations

import os
import re
from typing import Any, Iterable, List, Mapping


def _by_name(files: Iterable[Mapping[str, Any]], root: str) -> dict:
    try:
        return {os.path.relpath(entry["path"], root): entry["checksum"] for entry in files}
    except KeyError as error:
        raise ValueError(
            f"each file needs a path and a checksum (find with get_checksum: true), missing {error}"
        ) from error


def files_to_copy(
    source: Iterable[Mapping[str, Any]],
    source_root: str,
    target: Iterable[Mapping[str, Any]],
    target_root: str,
    skip: str = "",
) -> List[str]:
    """Paths relative to ``source_root`` of the ``source`` files that ``target`` (under ``target_root``) lacks or
    holds with another checksum, sorted; names matching the regular expression ``skip`` are left out."""
    have = _by_name(target or [], target_root)
    wanted = _by_name(source or [], source_root)
    pattern = re.compile(skip) if skip else None
    return sorted(
        name
        for name, checksum in wanted.items()
        if have.get(name) != checksum and not (pattern and pattern.search(name))
    )
