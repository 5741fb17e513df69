# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The recipe-2022 profile installed for real on the node it was made for: CPython 3.8 with the pip 20.0.2 that
Ubuntu 20.04's ``python3 -m venv`` gives, by the whole torch_stack role (ansible-playbook, connection local), with its
lock for Python 3.8; then the era stack at work: transformers, datasets, evaluate and accelerate import, and
``datasets.load_dataset`` reads a SQuAD data set laid out as the Hub serves it today (parquet files under
``plain_text/``), the way run_qa.py loads a Hub data set (by name; here the name is the folder's path).

What is real and what stands in: every package of the lock is the real wheel from the package index (pip's default
index, asked by the controller's pip as the role runs it; marked ``network``, skipped when the index does not
answer), but torch, IPEX and oneccl_bind_pt, whose builds live on PyTorch's and Intel's indexes, which cannot be
reached from here: they are tiny wheels from a local find-links folder, at the profile's versions with the ``+cpu``
label. The torch stand-in is just enough for accelerate 0.15, which imports torch when it is imported
(standin_torch.py): placeholders, no tensor code. The oneccl_bind_pt stand-in is tagged ``manylinux_2_28`` on purpose:
pip 20.0.2 does not know that tag (current pyarrow and impi-rt wheels carry it), so the install works only because
the role upgrades the virtualenv's pip from the wheelhouse first.

The virtualenv is made once per module and shared by the tests (the downloads and the install cost most of the
time). The role's node state stamps go to a temporary folder.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest
from ansible_env import ansible_env
from node_python import node_python
from standin_index import wheel
from standin_torch import INIT as TORCH_INIT

from ansible_collections.amx.cluster.plugins.module_utils import stack_profile as sp

pytestmark = [pytest.mark.slow, pytest.mark.network]

REPO = pathlib.Path(__file__).resolve().parents[3]
VENV_BIN = REPO / ".venv" / "bin"
LOCK = REPO / "roles" / "torch_stack" / "files" / "locks" / "recipe-2022" / "py3.8.txt"
UBUNTU_2004_PIP = "20.0.2"

PLAY = """
- hosts: all
  gather_facts: false
  roles:
    - role: amx.cluster.torch_stack
"""

# run_qa.py's way to a Hub data set, on a folder of the Hub's current layout for squad.
ERA_CHECK = textwrap.dedent(
    """
    import json, sys
    import transformers, datasets, evaluate, accelerate, fsspec, huggingface_hub
    import pyarrow as pa, pyarrow.parquet as pq

    folder = sys.argv[1]
    rows = {"train": 6, "validation": 3}
    for split, count in rows.items():
        table = pa.table({
            "id": [f"{split}-{i}" for i in range(count)],
            "title": ["AMX"] * count,
            "context": ["Intel AMX multiplies bfloat16 tiles."] * count,
            "question": ["What does AMX multiply?"] * count,
            "answers": [{"text": ["bfloat16 tiles"], "answer_start": [20]}] * count,
        })
        pq.write_table(table, f"{folder}/plain_text/{split}-00000-of-00001.parquet")
    loaded = datasets.load_dataset(folder)
    print(json.dumps({
        "versions": {m.__name__: m.__version__ for m in
                     (transformers, datasets, evaluate, accelerate, fsspec, huggingface_hub, pa)},
        "splits": {name: loaded[name].num_rows for name in loaded},
        "columns": loaded["train"].column_names,
        "answer": loaded["validation"][0]["answers"],
    }))
    """
)


def pip_env(top: pathlib.Path) -> dict:
    """pip without this machine's configuration (its local indexes, find-links and the constraint file
    /etc/xdg/pip/constraints.txt), the CA bundle kept: the package index is the only index."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_CACHE_DIR=str(top / "pip-cache"), PIP_DISABLE_PIP_VERSION_CHECK="1")
    if os.environ.get("PIP_CERT"):
        env["PIP_CERT"] = os.environ["PIP_CERT"]
    return env


def pip_version(venv: pathlib.Path) -> str:
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "--version"], capture_output=True, text=True, check=True
    )
    return out.stdout.split()[1]


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    python = node_python()
    if python is None:
        pytest.skip("no CPython 3.8 on this machine (pyenv's): recipe-2022's nodes run Ubuntu 20.04's Python 3.8")
    top = tmp_path_factory.mktemp("recipe-lock")
    env = pip_env(top)
    got = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--dest", str(top / "pip"), f"pip=={UBUNTU_2004_PIP}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    if got.returncode != 0:
        pytest.skip(
            f"the package index does not answer from here (pip download pip=={UBUNTU_2004_PIP}): "
            + got.stderr.strip()[-300:]
        )
    # Ubuntu 20.04's virtualenv: Python 3.8 with pip 20.0.2.
    venv = top / "venv"
    subprocess.run([str(python), "-m", "venv", str(venv)], check=True, capture_output=True)
    subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--no-index",
            "--find-links",
            str(top / "pip"),
            f"pip=={UBUNTU_2004_PIP}",
        ],
        check=True,
        capture_output=True,
        env=env,
    )
    assert pip_version(venv) == UBUNTU_2004_PIP
    standins = top / "standins"
    wheel(standins, "torch", "1.13.0+cpu", ["typing-extensions"], tag="cp38-cp38-linux_x86_64", init=TORCH_INIT)
    wheel(standins, "intel_extension_for_pytorch", "1.13.0+cpu", tag="cp38-cp38-manylinux2014_x86_64")
    wheel(
        standins,
        "oneccl_bind_pt",
        "1.13.0+cpu",
        tag="cp38-cp38-manylinux_2_28_x86_64",
        module="oneccl_bindings_for_pytorch",
    )
    return {"top": top, "python": python, "venv": venv, "standins": standins, "env": env}


def run_role(node) -> subprocess.CompletedProcess:
    top = node["top"]
    host = {
        "ansible_connection": "local",
        "ansible_python_interpreter": str(VENV_BIN / "python"),
        "torch_stack_profile": "recipe-2022",
        "torch_stack_allow_yanked": True,
        "torch_stack_base_python": str(node["python"]),
        "torch_stack_venv": str(node["venv"]),
        "torch_stack_user": "root",
        "torch_stack_install_os_packages": False,
        # PyTorch's CPU index and Intel's page stand in as one local folder; the package index is pip's default.
        "torch_stack_extra_index_urls": [],
        "torch_stack_find_links": [str(node["standins"])],
        "torch_stack_controller_cache": str(top / "controller cache"),
        "torch_stack_node_wheelhouse": str(top / "node-wheelhouse"),
        "node_stamp_force": True,  # every run decides from the manifest, not from a record
        "node_stamp_dir": str(top / "stamps"),
    }
    (top / "play.yml").write_text(PLAY)
    (top / "inventory.json").write_text(json.dumps({"all": {"hosts": {"node": host}}}))
    env = ansible_env(top / "home", drop=("PIP_",))
    env.update({k: v for k, v in node["env"].items() if k.startswith("PIP_")})
    argv = [str(VENV_BIN / "ansible-playbook"), "-i", str(top / "inventory.json"), str(top / "play.yml")]
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=top, timeout=1500, check=False)


@pytest.fixture(scope="module")
def runs(node):
    return run_role(node), run_role(node)


def task_block(output: str, name: str) -> str:
    return output.split(f"TASK [amx.cluster.torch_stack : {name}]")[1].split("TASK [")[0]


def test_the_recipe_installs_offline_into_a_pip_20_virtualenv_at_the_locks_versions(node, runs):
    first = runs[0]
    assert first.returncode == 0, first.stdout[-8000:] + first.stderr[-2000:]
    lock = sp.parse_lock(LOCK.read_text())
    assert "changed: [node]" in task_block(first.stdout, "Upgrade the virtualenv's pip from the wheelhouse")
    assert pip_version(node["venv"]) == lock["pip"] != UBUNTU_2004_PIP
    freeze = subprocess.run(
        [str(node["venv"] / "bin" / "python"), "-m", "pip", "freeze"], capture_output=True, text=True, check=True
    ).stdout
    installed = sp.parse_freeze(freeze)
    standins = {"torch", "intel-extension-for-pytorch", "oneccl-bind-pt"}
    assert {name: installed[name] for name in standins} == dict.fromkeys(standins, "1.13.0+cpu")
    # Every other package is the lock's release: nothing floated.
    assert {name: version for name, version in installed.items() if name not in standins} == {
        name: lock[name] for name in installed if name not in standins
    }
    assert {"fsspec", "huggingface-hub", "numpy", "pyarrow", "tokenizers", "accelerate"} <= set(installed)
    manifest = json.loads((node["venv"] / "torch-stack-manifest.json").read_text())
    assert manifest["versions"]["accelerate"] == "0.15.0" and manifest["versions"]["python"].startswith("3.8.")


def test_a_second_run_changes_nothing(runs):
    second = runs[1]
    assert second.returncode == 0, second.stdout[-8000:] + second.stderr[-2000:]
    recap = re.search(r"node\s*:\s*ok=\d+\s+changed=(\d+)", second.stdout)
    assert recap and recap.group(1) == "0", second.stdout[-4000:]


def era_check(node, folder: pathlib.Path, extra_path: str = "") -> subprocess.CompletedProcess:
    (folder / "plain_text").mkdir(parents=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PIP_", "HF_", "PYTHONPATH"))}
    env.update(HF_HOME=str(folder / "hf-home"), HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1")
    if extra_path:
        env["PYTHONPATH"] = extra_path
    argv = [str(node["venv"] / "bin" / "python"), "-c", ERA_CHECK, str(folder)]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, check=False)


def test_the_era_stack_imports_and_loads_the_hubs_squad_layout(node, runs, tmp_path):
    assert runs[0].returncode == 0
    done = era_check(node, tmp_path / "squad")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(report, indent=1))
    assert report["versions"]["fsspec"] == "2022.11.0" and report["versions"]["datasets"] == "2.7.1"
    assert report["versions"]["accelerate"] == "0.15.0" and report["versions"]["transformers"] == "4.24.0"
    assert report["splits"] == {"train": 6, "validation": 3}
    assert report["columns"] == ["id", "title", "context", "question", "answers"]
    assert report["answer"] == {"text": ["bfloat16 tiles"], "answer_start": [20]}


def test_the_same_check_fails_with_todays_fsspec(node, runs, tmp_path):
    """Without the lock pip takes the newest fsspec for Python 3.8; datasets 2.7.1 then cannot list the files."""
    assert runs[0].returncode == 0
    newer = tmp_path / "newest-fsspec"
    got = subprocess.run(
        [str(node["venv"] / "bin" / "python"), "-m", "pip", "install", "--no-deps", "--target", str(newer), "fsspec"],
        capture_output=True,
        text=True,
        env=node["env"],
        timeout=300,
        check=False,
    )
    assert got.returncode == 0, got.stderr[-2000:]
    floated = next(newer.glob("fsspec-*.dist-info")).name.split("-")[1][: -len(".dist")]
    assert sp.version_key(floated) > sp.version_key("2022.11.0")
    done = era_check(node, tmp_path / "squad", str(newer))
    print(f"fsspec {floated}:", done.stderr.strip().splitlines()[-1])
    assert done.returncode != 0
    assert "Invalid pattern: '**' can only be an entire path component" in done.stderr
