# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.node_stamp_inputs: the inputs hash of a node role.

A thin wrapper over plugin_utils.node_stamp; its documentation is the sidecar node_stamp_inputs.yml beside this file.
"""

from __future__ import annotations

import yaml

from ansible_collections.amx.cluster.plugins.plugin_utils import node_stamp
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import INPUT_ERRORS, filter_function


class FilterModule:
    def filters(self):
        return {
            "node_stamp_inputs": filter_function(
                "node_stamp_inputs", node_stamp.node_stamp_inputs, (*INPUT_ERRORS, OSError, yaml.YAMLError)
            )
        }
