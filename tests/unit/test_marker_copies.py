# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The PEP 508 marker values are written in four self-contained places (two node probes that run alone on a node,
the controller-side runner that runs under the controller pip's Python, and module_utils): they must stay one list."""

import json
import subprocess
import sys
from pathlib import Path

from ansible_collections.amx.cluster.plugins.module_utils.examples import MARKER_KEYS
from ansible_collections.amx.cluster.plugins.plugin_utils import pip_node_markers

REPO = Path(__file__).resolve().parents[2]
PROBES = (REPO / "roles/torch_stack/files/probe_python.py", REPO / "roles/hf_examples/files/probe_node.py")


def probe_markers(path):
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])["markers"]


def test_every_copy_names_the_same_marker_variables():
    assert tuple(pip_node_markers.KEYS) == tuple(MARKER_KEYS)
    found = [probe_markers(path) for path in PROBES]
    assert [tuple(sorted(markers)) for markers in found] == [tuple(sorted(MARKER_KEYS))] * len(PROBES)
    assert found[0] == found[1], "both probes compute the same values on the same Python"
