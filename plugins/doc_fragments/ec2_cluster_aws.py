# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the collection's AWS modules add to amazon.aws's connection options (amazon.aws.common.modules)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options: {}
notes:
  - The connection options are amazon.aws's. Calls are retried in botocore's C(standard) mode, 5 attempts;
    O(aws_config) takes precedence.
  - The module is in the action group C(amx.cluster.aws), which also holds every module of the C(amazon.aws.aws)
    group, so C(module_defaults) for C(group/amx.cluster.aws) reach both collections' modules. The groups
    C(group/aws) and C(group/amazon.aws.aws) are amazon.aws's own and do not reach this collection's modules.
"""
