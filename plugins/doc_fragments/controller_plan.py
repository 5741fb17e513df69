# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The attributes of the roles' plans: actions that compute on the controller and change nothing."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
attributes:
  action:
    support: full
    description: Runs as the action plugin of the same name, on the controller; nothing runs on the host.
  check_mode:
    support: full
    description: Changes nothing in either mode.
  diff_mode:
    support: none
    description: Changes nothing.
  platform:
    support: full
    platforms: posix
    description: Runs on the controller.
"""
