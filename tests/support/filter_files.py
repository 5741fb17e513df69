# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection's filters as Jinja gets them, read from plugins/filter/ (one filter per file, named after it)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Callable, Dict

FILTER_DIR = Path(__file__).resolve().parents[2] / "plugins" / "filter"


def filters_named(prefix: str) -> Dict[str, Callable[..., Any]]:
    """Name -> callable of every filter whose file name starts with ``prefix``."""
    found: Dict[str, Callable[..., Any]] = {}
    for path in sorted(FILTER_DIR.glob(f"{prefix}*.py")):
        module = importlib.import_module(f"ansible_collections.amx.cluster.plugins.filter.{path.stem}")
        found.update(module.FilterModule().filters())
    return found
