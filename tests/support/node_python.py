# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The recipe's node Python (3.8, as on Ubuntu 20.04) where pyenv has one on this machine."""

from __future__ import annotations

import os
import pathlib
from typing import Optional

PYENV = pathlib.Path(os.environ.get("PYENV_ROOT", pathlib.Path.home() / ".pyenv")) / "versions"


def node_python() -> Optional[pathlib.Path]:
    found = sorted(PYENV.glob("3.8.*/bin/python3.8"))
    return found[-1] if found else None
