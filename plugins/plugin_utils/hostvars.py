# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading another host's variables from an action run once for the play (the roles' plans)."""

from __future__ import annotations

from typing import Any, Mapping

# What hostvar() gives for a value that is not there, when the caller must tell it apart from a null.
MISSING = object()


def hostvar(hostvars: Mapping[str, Any], host: str, *path: str, default: Any = None) -> Any:
    """hostvars[host][path...]; `default` when a level is absent, skipped or does not template."""
    try:
        value: Any = hostvars[host]
        for key in path:
            if not isinstance(value, Mapping) or key not in value:
                return default
            value = value[key]
    except Exception:  # Ansible's templating errors share no base class here
        return default
    return value
