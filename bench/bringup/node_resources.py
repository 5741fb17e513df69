# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What each container node may use of this machine, as `docker run` options (one place for them all).

Uncapped, the containers of a cluster draw from one pool of CPUs: a node installing alone gets every core, which
separate machines would not give it. A cap per node (`docker run --cpus`) makes each node a machine of that size;
it bounds each node's share, it does not add cores: N nodes capped at c CPUs still share the machine's, so a
cap above cpus / N only holds while the other nodes are idle.
"""

from __future__ import annotations

import os
from typing import List, Optional


def cpu_cap_options(cpus: Optional[float], machine_cpus: Optional[int] = None) -> List[str]:
    """`docker run` options that cap one node at `cpus` CPUs (None: no cap, no options)."""
    if cpus is None:
        return []
    available = machine_cpus or os.cpu_count() or 1
    if not 0.01 <= cpus <= available:
        raise ValueError(
            f"a node's CPU cap must be between 0.01 and this machine's {available} CPUs, not {cpus}: give --node-cpus "
            "a value in that range, or leave it out for no cap"
        )
    return ["--cpus", f"{cpus:g}"]
