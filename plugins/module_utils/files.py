# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Files the collection writes on the controller and the nodes. Standard library only: modules run it on the
node's Python (3.8+)."""

from __future__ import annotations

import os
import tempfile
from typing import Union


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
