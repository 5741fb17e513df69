# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The machine a benchmark ran on, as its report states it (figures on a shared machine depend on its load)."""

from __future__ import annotations

import os
import platform
from typing import Any, Dict, Optional


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as the reports print them."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def ansible_core_version() -> str:
    from ansible import release

    return release.__version__


def describe_machine(load_before: str, load_after: Optional[str] = None) -> Dict[str, Any]:
    """CPUs, load average before (and after) the run, Python and ansible-core versions; a benchmark adds its own
    tools' versions after these."""
    machine: Dict[str, Any] = {"cpus": os.cpu_count(), "load_before": load_before}
    if load_after is not None:
        machine["load_after"] = load_after
    machine["python"] = platform.python_version()
    machine["ansible_core"] = ansible_core_version()
    return machine
