# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.train_run_record: a thin wrapper over module_utils.launch_plan.run_record.

Its documentation is the sidecar train_run_record.yml beside this file.
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.launch_plan import run_record
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    """A run's record, run.json, from its static part and what the run gave."""

    def filters(self):
        return {"train_run_record": filter_function("train_run_record", run_record)}
