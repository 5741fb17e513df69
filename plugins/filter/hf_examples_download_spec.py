# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.hf_examples_download_spec: a thin wrapper over module_utils.examples.download_spec.

Its documentation is the sidecar hf_examples_download_spec.yml beside this file.
In use: requirements_text | hf_examples_download_spec(freeze_text, marker_values, indexes, platforms) -> spec with
key.
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.examples import download_spec
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"hf_examples_download_spec": filter_function("hf_examples_download_spec", download_spec)}
