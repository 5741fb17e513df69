# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where the checkout and the project's tools are, and the environment a benchmark gives the tools it runs."""

from __future__ import annotations

import os
import pathlib
import sys
from typing import Dict, Sequence

REPO = pathlib.Path(__file__).resolve().parents[2]
VENV_BIN = pathlib.Path(sys.executable).parent
RESULTS = REPO / "bench" / "results"


def require_venv_tools(tools: Sequence[str]) -> None:
    """Stop with the fix when a tool the benchmark runs is not next to the Python running it (the project's .venv)."""
    for tool in tools:
        if not (VENV_BIN / tool).exists():
            raise SystemExit(f"{tool} is not next to {sys.executable}: run this with the project's .venv/bin/python")


def environment_without(prefixes: Sequence[str]) -> Dict[str, str]:
    """This process's environment without the variables whose names start with one of `prefixes` (the user's
    ANSIBLE_* or AWS_* settings would change what the benchmark measures)."""
    return {name: value for name, value in os.environ.items() if not name.startswith(tuple(prefixes))}
