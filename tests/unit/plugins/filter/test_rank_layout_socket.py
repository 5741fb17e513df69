# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""amx.cluster.rank_layout in mode=socket through Ansible itself: the topology as a variable, as the role passes it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.amx.cluster.plugins.filter.rank_layout import rank_layout_filter

REPO = Path(__file__).resolve().parents[4]
# r7iz.metal-16xl as cpu_facts reports it: 2 sockets x 16 cores, SMT 2
R7IZ_16XL = {
    "sockets": 2,
    "physical_cores": 32,
    "socket_cores": [
        {"socket": 0, "numa_nodes": [0], "cores": list(range(16))},
        {"socket": 1, "numa_nodes": [1], "cores": list(range(16, 32))},
    ],
    "numa_nodes": [
        {"node": 0, "cpus": list(range(16)) + list(range(32, 48))},
        {"node": 1, "cpus": list(range(16, 32)) + list(range(48, 64))},
    ],
}


def test_the_filter_reports_a_layout_error_under_its_name():
    with pytest.raises(AnsibleFilterError) as error:
        rank_layout_filter(32, processes_per_node=3, mode="socket", topology=R7IZ_16XL)
    assert str(error.value).startswith("amx.cluster.rank_layout: processes_per_node=3 does not split")


def test_socket_mode_in_a_real_play(tmp_path):
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"amx_check_topology": R7IZ_16XL, "train_pin_ranks": None}))
    expr = (
        "{% set l = amx_check_topology.physical_cores | amx.cluster.rank_layout(nodes=4, processes_per_node=2, "
        "ccl_workers=2, os_reserved_cores=6, mode='socket', topology=amx_check_topology, pin=train_pin_ranks) %}"
        "{{ {'omp': l.omp_num_threads, 'cpus': l.rank_cpus, 'ccl': l.ccl_worker_affinity, "
        "'ranks': l.ranks | map(attribute='cpus') | list} | to_json }}"
    )
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="json")
    env.pop("ANSIBLE_CONFIG", None)
    ansible = [str(REPO / ".venv" / "bin" / "ansible"), "localhost", "-c", "local", "-i", "localhost,"]
    done = subprocess.run(
        [*ansible, "-e", f"@{facts}", "-m", "ansible.builtin.debug", "-a", "msg=" + expr],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]["msg"]
    if isinstance(result, str):
        result = json.loads(result)
    assert result == {
        "omp": 11,
        "cpus": "3-15;19-31",
        "ccl": "14,15,30,31",
        "ranks": ["3-15", "19-31"] * 4,
    }
