# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.stack_download_args: a thin wrapper over module_utils.stack_profile.pip_download_args.

Its documentation is the sidecar stack_download_args.yml beside this file.
In use: resolved | stack_download_args(python_version, platforms, dest) -> argv after "pip download".
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import pip_download_args
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"stack_download_args": filter_function("stack_download_args", pip_download_args)}
