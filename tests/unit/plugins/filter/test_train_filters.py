# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
import json
import os
import subprocess
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.amx.cluster.plugins.filter import flag_dialect, launch_command, launch_env, rank_layout

REPO = Path(__file__).resolve().parents[4]


def filters():
    found = {}
    for module in (rank_layout, flag_dialect, launch_command, launch_env):
        found.update(module.FilterModule().filters())
    return found


def test_each_filter_is_exposed_under_its_file_name():
    assert sorted(filters()) == ["flag_dialect", "launch_command", "launch_env", "rank_layout"]


def test_filters_compose_into_the_recipe_command():
    f = filters()
    layout = f["rank_layout"](32, 4, 2, 2, 6)
    dialect = f["flag_dialect"]("4.24.0", 8, oneccl_installed=True)
    launch = f["launch_command"](
        layout,
        dialect,
        "run_qa.py",
        ["--output_dir", "/tmp/debug_squad/"],
        master_addr="172.31.3.190",
        bf16=True,
    )
    assert launch["command"] == (
        "mpirun -f ~/hosts -n 8 -ppn 2 -genv OMP_NUM_THREADS=24 python3 run_qa.py "
        "--output_dir /tmp/debug_squad/ --no_cuda --xpu_backend ccl --bf16"
    )
    env = f["launch_env"](layout, dialect, master_addr="172.31.3.190")
    assert env["CCL_WORKER_COUNT"] == "2"
    assert env["OMP_NUM_THREADS"] == "24"


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "message"),
    [
        ("rank_layout", (4, 1, 8), {}, "amx.cluster.rank_layout: processes_per_node=8 is more than"),
        ("rank_layout", (32,), {"bogus": 1}, "amx.cluster.rank_layout: "),
        ("flag_dialect", ("4.10.0", 2), {}, "amx.cluster.flag_dialect: transformers 4.10.0 is too old"),
        ("flag_dialect", ("4.24.0",), {"colour": "red"}, "amx.cluster.flag_dialect: "),
        ("launch_command", ({}, {}, "x.py"), {}, "amx.cluster.launch_command: layout lacks"),
        ("launch_env", ({}, {}), {}, "amx.cluster.launch_env: layout lacks"),
    ],
)
def test_errors_name_the_filter(name, args, kwargs, message):
    with pytest.raises(AnsibleFilterError) as error:
        filters()[name](*args, **kwargs)
    assert str(error.value).startswith(message)


@pytest.mark.skipif(not (REPO / ".venv" / "bin" / "ansible").exists(), reason="needs the controller venv (make setup)")
def test_filters_resolve_by_fqcn_in_a_real_play(tmp_path):
    """Ansible itself finds the filters as amx.cluster.* and renders the recipe's numbers."""
    expr = (
        "{% set l = 32 | amx.cluster.rank_layout(nodes=4, processes_per_node=2, ccl_workers=2, os_reserved_cores=6) %}"
        "{% set d = '4.24.0' | amx.cluster.flag_dialect(world_size=8, oneccl_installed=true) %}"
        "{{ {'omp': l.omp_num_threads, 'flags': d.flags, "
        "'cmd': (l | amx.cluster.launch_command(d, 'run_qa.py', master_addr='10.0.0.1')).command} | to_json }}"
    )
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="json")
    env.pop("ANSIBLE_CONFIG", None)
    done = subprocess.run(
        [
            str(REPO / ".venv" / "bin" / "ansible"),
            "localhost",
            "-c",
            "local",
            "-i",
            "localhost,",
            "-m",
            "ansible.builtin.debug",
            "-a",
            "msg=" + expr,
        ],
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
    assert result["omp"] == 24
    assert result["flags"] == ["--no_cuda", "--xpu_backend", "ccl"]
    assert (
        result["cmd"]
        == "mpirun -f ~/hosts -n 8 -ppn 2 -genv OMP_NUM_THREADS=24 python3 run_qa.py --no_cuda --xpu_backend ccl"
    )
