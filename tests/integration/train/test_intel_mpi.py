# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The role's launch under Intel MPI for real: impi-rt's Hydra starts 2 ranks on this machine (and MPICH's, the same).

The launch script is rendered as roles/train renders it for ``train_mpi: intel`` on a stack without the oneCCL
binding (mpi_launcher, then launch_command with the role's launcher options, rank wrapper and environment), then run
with bash. Intel MPI comes from the ``impi-rt`` package of the package index, installed into a scratch venv under
.cache/impi-venv (``AMX_CLUSTER_IMPI_VENV`` points at an existing one); when it cannot be installed the tests are
skipped and say why. The all_reduce test also needs torch (the ``train_python`` fixture; ``AMX_CLUSTER_TRAIN_PYTHON``
reuses an interpreter that has it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from train_helpers import FILES, REPO, locked, run_env

from ansible_collections.amx.cluster.plugins.module_utils.dialect import flag_dialect
from ansible_collections.amx.cluster.plugins.module_utils.launch import launch_command, mpi_launcher
from ansible_collections.amx.cluster.plugins.module_utils.layout import rank_layout
from ansible_collections.amx.cluster.plugins.module_utils.train_agent import split_ranks

pytestmark = pytest.mark.slow
IMPI_CACHE = REPO / ".cache" / "impi-venv"

PROBE = """
import json, os, socket
names = ["PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "OMP_NUM_THREADS", "I_MPI_ROOT",
         "FI_PROVIDER_PATH", "LD_LIBRARY_PATH", "MASTER_ADDR", "MASTER_PORT", "NUM_PROCESSES", "AMX_CLUSTER_RUN_ID"]
# One write: print() writes the line and its end apart, and two ranks' pieces can interleave under mpirun.
line = json.dumps(dict({name: os.environ.get(name) for name in names}, host=socket.gethostname()))
os.write(1, line.encode() + b"\\n")
"""


@pytest.fixture(scope="session")
def impi_venv() -> Path:
    given = os.environ.get("AMX_CLUSTER_IMPI_VENV")
    if given:
        return Path(given)
    venv = IMPI_CACHE / f"py{sys.version_info.major}.{sys.version_info.minor}"
    marker = venv / ".complete"
    with locked(IMPI_CACHE / "venv.lock"):
        if marker.exists() and (venv / "bin" / "mpiexec.hydra").exists():
            return venv
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        done = subprocess.run(
            [str(venv / "bin" / "pip"), "install", "--disable-pip-version-check", "impi-rt"],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if done.returncode != 0 or not (venv / "bin" / "mpiexec.hydra").exists():
            pytest.skip("impi-rt (Intel MPI) cannot be installed from the package index here: " + done.stderr[-400:])
        marker.write_text("impi-rt\n")
    return venv


def impi_version(venv: Path) -> str:
    done = subprocess.run(
        [str(venv / "bin" / "pip"), "show", "impi-rt"], capture_output=True, text=True, check=True, timeout=120
    )
    return next(line.split(":", 1)[1].strip() for line in done.stdout.splitlines() if line.startswith("Version:"))


def intel(venv: Path) -> dict:
    return mpi_launcher("intel", oneccl_installed=False, venv=str(venv), packages={"impi-rt": impi_version(venv)})


def render(mpi: dict, tmp_path: Path, program: list, hostfile: Path, port: int, transformers: str = "5.24.0") -> dict:
    """The role's launch for this MPI, 2 ranks on this node (the wiring of vars/main.yml, by hand)."""
    layout = rank_layout(2, processes_per_node=2, mode="partitioned")
    dialect = flag_dialect(transformers, world_size=2)
    env = {"AMX_CLUSTER_RUN_ID": "impi-1", "PYTHONFAULTHANDLER": "1", "TOKENIZERS_PARALLELISM": "false"}
    env.update(mpi["env"])
    launch = launch_command(
        layout,
        dialect,
        program[0],
        program[1:],
        hostfile=str(hostfile),
        python=str(FILES / "rank_exec.sh"),
        launcher=mpi["launcher"],
        launcher_options=["-prepend-rank", "-localhost", "127.0.0.1"],
        path_env=mpi["path_env"],
        master_addr="127.0.0.1",
        master_port=port,
        kmp_hw_subset=None,
        bf16=True,
        extra_env=env,
    )
    script = tmp_path / "launch.sh"
    script.write_text(launch["script"])
    return {"launch": launch, "script": script, "mpi": mpi}


def run(script: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    # A clean environment like a login's: no Intel MPI variables and no venv on the PATH; the script sets them.
    env = {key: value for key, value in run_env().items() if not key.startswith(("I_MPI_", "FI_", "LD_LIBRARY"))}
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=timeout, check=False)


@pytest.mark.parametrize("implementation", ["intel", "mpich"])
def test_two_ranks_start_with_the_roles_options(implementation, request, localhost_hostfile, free_port, tmp_path):
    """The same launch options and environment work under Intel MPI and under MPICH."""
    if implementation == "intel":
        impi_venv = request.getfixturevalue("impi_venv")
        mpi = intel(impi_venv)
    else:
        mpi = mpi_launcher("mpich", mpich_launcher=request.getfixturevalue("mpirun"))
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    rendered = render(mpi, tmp_path, [sys.executable, str(probe)], localhost_hostfile, free_port)
    launch = rendered["launch"]
    assert launch["argv"][0] == mpi["launcher"]
    assert launch["argv"][7:10] == ["-prepend-rank", "-localhost", "127.0.0.1"]
    done = run(rendered["script"])
    print(rendered["script"].read_text())
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    logs = split_ranks(done.stdout)
    assert sorted(key for key in logs if key.startswith("rank-")) == ["rank-0", "rank-1"], logs
    for rank in (0, 1):
        line = json.loads(logs[f"rank-{rank}"][-1])
        assert line["PMI_RANK"] == str(rank) and line["PMI_SIZE"] == "2"
        assert line["MPI_LOCALRANKID"] == str(rank) and line["MPI_LOCALNRANKS"] == "2"
        assert line["OMP_NUM_THREADS"] == "1"  # -genv from the layout (2 cores, 2 ranks, partitioned)
        if implementation == "intel":
            assert line["I_MPI_ROOT"] == str(impi_venv) and line["FI_PROVIDER_PATH"] == f"{impi_venv}/lib"
            assert line["LD_LIBRARY_PATH"].split(":")[0] == f"{impi_venv}/lib"
        else:
            assert line["I_MPI_ROOT"] is None
        assert line["MASTER_ADDR"] == "127.0.0.1" and line["MASTER_PORT"] == str(free_port)
        assert line["NUM_PROCESSES"] == "2" and line["AMX_CLUSTER_RUN_ID"] == "impi-1"


def test_a_failing_rank_is_named_and_fails_the_launch(impi_venv, localhost_hostfile, free_port, tmp_path):
    fail = tmp_path / "fail.py"
    fail.write_text("import os, sys\nsys.exit(3 if os.environ['PMI_RANK'] == '1' else 0)\n")
    rendered = render(intel(impi_venv), tmp_path, [sys.executable, str(fail)], localhost_hostfile, free_port)
    done = run(rendered["script"])
    assert done.returncode != 0
    assert "amx.cluster: rank 1 ended: exit code 3" in done.stdout + done.stderr


def test_gloo_all_reduce_under_intel_mpi(
    impi_venv, train_python, installed_versions, localhost_hostfile, free_port, tmp_path
):
    program = [str(train_python), str(FILES / "smoke_allreduce.py"), "--expect_world", "2", "--timeout", "120"]
    rendered = render(
        intel(impi_venv), tmp_path, program, localhost_hostfile, free_port, installed_versions["transformers"]
    )
    done = run(rendered["script"])
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    logs = split_ranks(done.stdout)
    lines = [json.loads(logs[f"rank-{rank}"][-1]) for rank in (0, 1)]
    assert [line["rank"] for line in lines] == [0, 1]
    for line in lines:
        assert line["ok"] is True and line["backend"] == "gloo" and line["world"] == 2
        assert line["result"] == line["expected"] == 3.0
