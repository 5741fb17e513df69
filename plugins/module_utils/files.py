# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Files the collection writes on the controller and the nodes. Standard library only: modules run it on the
node's Python (3.8+)."""

from __future__ import annotations

import os
import stat
import tempfile
from typing import Optional, Tuple, Union

# The most a record of the collection's own (a stamp, a plan) may hold.
RECORD_LIMIT = 1 << 22
ABSENT = "is absent"


def write_atomically(path: str, content: Union[str, bytes], mode: int = 0o600, prefix: str = ".amx-cluster-") -> None:
    """Write ``content`` to ``path`` with ``mode``, all or nothing: into a temporary file beside it (created 0600,
    synced), then renamed over it, so that a reader never sees half a file and a failure leaves the old one."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=prefix, suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def read_root_record(path: str) -> Tuple[Optional[str], str]:
    """(text, "") of a record the collection wrote as root: a regular file of root's with mode 0600, opened without
    following a symlink. Otherwise (None, why), why being what follows the file's name in a sentence: "is absent"
    (ABSENT), "cannot be opened (...; a symlink is refused)", "is not a file of root's with mode 0600" or "is not
    text". Its contents never go into the reason."""
    try:
        # Not waiting either: a FIFO put in the record's place is refused below, not read.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None, ABSENT
    except OSError as exc:
        return None, f"cannot be opened ({type(exc).__name__}; a symlink is refused)"
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != 0 or stat.S_IMODE(info.st_mode) & 0o077:
            return None, "is not a file of root's with mode 0600"
        raw = handle.read(RECORD_LIMIT)
    try:
        return raw.decode("utf-8"), ""
    except UnicodeDecodeError:
        return None, "is not text"
