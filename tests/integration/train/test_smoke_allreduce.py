# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""smoke_allreduce.py for real: an all_reduce over 2 ranks under mpirun, and its failure paths."""

import json
import re
import subprocess
import time

import pytest
from train_helpers import FILES, run_env

from ansible_collections.amx.cluster.plugins.module_utils.dialect import flag_dialect
from ansible_collections.amx.cluster.plugins.module_utils.launch import launch_command
from ansible_collections.amx.cluster.plugins.module_utils.layout import rank_layout
from ansible_collections.amx.cluster.plugins.module_utils.onednn_verbose import run_kernels

pytestmark = pytest.mark.slow
SMOKE = str(FILES / "smoke_allreduce.py")


def launch_smoke(train_python, installed_versions, hostfile, port, args, tmp_path, world=2):
    """Render the job's launch with the smoke test as the script (dialect flags included) and run it."""
    layout = rank_layout(2, processes_per_node=world, mode="partitioned")
    dialect = flag_dialect(installed_versions["transformers"], world_size=world)
    launch = launch_command(
        layout,
        dialect,
        SMOKE,
        args,
        hostfile=str(hostfile),
        python=str(train_python),
        master_addr="127.0.0.1",
        master_port=port,
        kmp_hw_subset=None,
        bf16=True,
    )
    script = tmp_path / "smoke.sh"
    script.write_text(launch["script"])
    done = subprocess.run(
        ["bash", str(script)], capture_output=True, text=True, env=run_env(), timeout=300, check=False
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return done, sorted(lines, key=lambda line: line["rank"]), launch


def test_two_ranks_sum(train_python, installed_versions, mpirun, localhost_hostfile, free_port, tmp_path):
    started = time.time()
    done, lines, launch = launch_smoke(
        train_python,
        installed_versions,
        localhost_hostfile,
        free_port,
        ["--expect_world", "2", "--timeout", "120"],
        tmp_path,
    )
    print("smoke all_reduce, 2 ranks: %.1f s" % (time.time() - started))
    assert done.returncode == 0, done.stdout + done.stderr
    assert launch["argv"][-3:] == ["--ddp_backend", "gloo", "--bf16"]
    assert [line["rank"] for line in lines] == [0, 1]
    for line in lines:
        assert line["ok"] is True
        assert line["world"] == 2
        assert line["result"] == line["expected"] == 3.0
        assert line["backend"] == "gloo"
        assert line["master_port"] == str(free_port)
        assert len(line["hosts"]) == 2


# The question asked of oneDNN directly, apart from the smoke test: a bf16 Linear forward with ONEDNN_VERBOSE=1
# (DNNL_VERBOSE=1 for older builds) in a fresh interpreter, its matmul / inner product lines read with a plain regex.
ASK_ONEDNN = """
import torch
layer = torch.nn.Linear(128, 128)
with torch.autocast("cpu", dtype=torch.bfloat16):
    layer(torch.randn(32, 128))
"""
MATRIX_IMPL = re.compile(r"_verbose,(?:.*?,)?exec,cpu,(?:matmul|inner_product),([^,]+),[^,]*,[^,]*(?:src_|src:)bf16")


def test_the_probe_records_the_kernel_onednn_names(
    train_python, installed_versions, mpirun, localhost_hostfile, free_port, tmp_path
):
    done, lines, _launch = launch_smoke(
        train_python, installed_versions, localhost_hostfile, free_port, ["--expect_world", "2"], tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # Local rank 0 probes, the other rank does not; oneDNN's lines go into the JSON line, not into the log.
    assert "onednn" in lines[0] and "onednn" not in lines[1]
    assert not [line for line in done.stdout.splitlines() if line.startswith("onednn_verbose")]
    amx = run_kernels([line for line in lines if line["local_rank"] == 0], "integration")
    print("run.json's amx on this machine:", json.dumps(amx, indent=1))

    asked = subprocess.run(
        [str(train_python), "-c", ASK_ONEDNN],
        capture_output=True,
        text=True,
        env=run_env(ONEDNN_VERBOSE="1", DNNL_VERBOSE="1"),
        timeout=300,
        check=True,
    )
    said = sorted({match.group(1) for match in MATRIX_IMPL.finditer(asked.stdout)})
    assert said, asked.stdout[-2000:]
    node = amx["nodes"][lines[0]["host"]]
    assert node["impls"] == said
    assert node["isa"] == said[0].rsplit(":", 1)[1]
    assert node["amx"] is ("amx" in said[0])
    assert amx["used"] == ("yes" if node["amx"] else f"no ({node['isa']})")


# An older torch without its own verbose switch: the probe then relies on ONEDNN_VERBOSE / DNNL_VERBOSE, which
# smoke_allreduce.py sets before it imports torch (here as its main() does; the switch is hidden from the probe).
WITHOUT_SWITCH = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
if sys.argv[2] == "with-env":
    os.environ["ONEDNN_VERBOSE"] = os.environ["DNNL_VERBOSE"] = "1"
import torch
import smoke_allreduce
torch.backends.mkldnn.verbose = None
assert getattr(torch.backends.mkldnn, "verbose", None) is None
sys.stdout.write(json.dumps(smoke_allreduce.onednn_probe(torch)) + "\\n")
"""


@pytest.mark.parametrize("env", ["with-env", "without"])
def test_the_probe_works_from_the_environment_alone(train_python, env):
    clean = {key: value for key, value in run_env().items() if key not in ("ONEDNN_VERBOSE", "DNNL_VERBOSE")}
    done = subprocess.run(
        [str(train_python), "-c", WITHOUT_SWITCH, str(FILES), env],
        capture_output=True,
        text=True,
        env=clean,
        timeout=300,
        check=True,
    )
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    record = run_kernels([{"host": "here", "rank": 0, **probe}])["nodes"]["here"]
    if env == "with-env":
        assert record["impl"] and record["amx"] is not None, probe
    else:
        # Neither the switch nor the variables: oneDNN says nothing, and the record says so.
        assert record["impl"] is None and record["reason"].startswith("oneDNN printed no verbose line"), probe


def test_wrong_sum_fails(train_python, installed_versions, mpirun, localhost_hostfile, free_port, tmp_path):
    done, lines, _launch = launch_smoke(
        train_python, installed_versions, localhost_hostfile, free_port, ["--expect_sum", "4"], tmp_path
    )
    assert done.returncode != 0
    assert lines and all(line["ok"] is False and line["result"] == 3.0 for line in lines)


def test_wrong_world_fails_at_once(train_python, installed_versions, mpirun, localhost_hostfile, free_port, tmp_path):
    started = time.time()
    done, lines, _launch = launch_smoke(
        train_python, installed_versions, localhost_hostfile, free_port, ["--expect_world", "3"], tmp_path
    )
    assert done.returncode != 0
    assert any("sees a world of 2 processes, expected 3" in line["error"] for line in lines)
    assert time.time() - started < 60


def test_a_missing_rank_becomes_a_timeout_not_a_hang(train_python, free_port):
    """Rank 1 of 2 with no rank 0 anywhere: the rendezvous never completes; the watchdog ends it."""
    started = time.time()
    done = subprocess.run(
        [str(train_python), SMOKE, "--timeout", "20"],
        capture_output=True,
        text=True,
        env=run_env(PMI_RANK="1", PMI_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port)),
        timeout=120,
        check=False,
    )
    elapsed = time.time() - started
    assert done.returncode == 124, done.stdout + done.stderr
    line = json.loads(done.stdout.strip().splitlines()[-1])
    assert line["ok"] is False
    assert "timed out during init_process_group" in line["error"]
    assert "MASTER_ADDR" in line["hint"]
    assert 19 <= elapsed < 60
