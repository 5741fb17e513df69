# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The blog preset (playbooks/vars/blog-recipe.yml) renders the blog's launch, flag by flag.

The launch is rendered the way roles/train renders it (tasks/prepare.yml, tasks/single_node.yml, vars/main.yml):
the same functions (cpu_info.topology, rank_layout, flag_dialect, mpi_launcher, script_args, launch_command) with
the preset's values over the role's defaults, on four r7iz.metal-16xl nodes read from the fixture
tests/unit/fixtures/cpu/spr_metal_r7iz. Only the Jinja wiring between them is repeated here (marked "wiring").
Every difference from the blog is listed in ALLOWED_* by name; a difference not listed fails, and so does a listed
one that no longer occurs.
"""

from __future__ import annotations

import pathlib
import re
import shlex

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.amx.cluster.plugins.module_utils import cpu_info
from ansible_collections.amx.cluster.plugins.module_utils.dialect import flag_dialect
from ansible_collections.amx.cluster.plugins.module_utils.launch import launch_command, mpi_launcher, script_args
from ansible_collections.amx.cluster.plugins.module_utils.layout import rank_layout
from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import profile_problems, resolve_profile

REPO = pathlib.Path(__file__).resolve().parents[2]
PRESET = REPO / "playbooks" / "vars" / "blog-recipe.yml"
FIXTURE = REPO / "tests" / "unit" / "fixtures" / "cpu" / "spr_metal_r7iz"

# The blog's commands, quoted as the reference: "Accelerating PyTorch Transformers with Intel Sapphire Rapids,
# part 1", https://huggingface.co/blog/intel-sapphire-rapids (the single-node sanity check, then the 4-node job).
BLOG_URL = "https://huggingface.co/blog/intel-sapphire-rapids"
BLOG_SINGLE = r"""
export LD_PRELOAD="/usr/lib/x86_64-linux-gnu/libtcmalloc.so"
python run_qa.py --model_name_or_path distilbert-base-uncased \
--dataset_name squad --do_train --do_eval --per_device_train_batch_size 32 \
--num_train_epochs 1  --output_dir /tmp/debug_squad/ \
--use_ipex --bf16 --no_cuda
"""
BLOG_EXPORTS = r"""
export MASTER_ADDR=172.31.3.190
export NUM_PROCESSES=8
export NUM_PROCESSES_PER_NODE=2
export CCL_WORKER_COUNT=2
export CCL_WORKER_AFFINITY=auto
export KMP_HW_SUBSET=1T
"""
BLOG_MPIRUN = r"""
mpirun -f ~/hosts \
 -n $NUM_PROCESSES -ppn $NUM_PROCESSES_PER_NODE  \
 -genv OMP_NUM_THREADS=24 \
 -genv LD_PRELOAD="/usr/lib/x86_64-linux-gnu/libtcmalloc.so" \
 python3 run_qa.py \
 --model_name_or_path distilbert-base-uncased \
 --dataset_name squad \
 --do_train \
 --do_eval \
 --per_device_train_batch_size 32  \
 --num_train_epochs 1  \
 --output_dir /tmp/debug_squad/ \
 --overwrite_output_dir \
 --no_cuda \
 --xpu_backend ccl \
 --bf16
"""

# What this machine's nodes would have: the master's private address, tcmalloc where Ubuntu's
# libgoogle-perftools-dev puts it (amx.cluster.tcmalloc), the venv and the examples checkout (role defaults).
MASTER_ADDR = "172.31.3.190"
TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc.so"
VENV = "/opt/amx-cluster/venv"
EXAMPLES = "/opt/amx-cluster/transformers/examples/pytorch/question-answering"
RUN_DIR = "/home/ubuntu/amx-cluster-runs/blog-1"
SETVARS = f"{VENV}/lib/python3.8/site-packages/oneccl_bindings_for_pytorch/env/setvars.sh"

# Every allowed difference between the role's launch and the blog's, by name, with why.
ALLOWED_LAUNCHER = {
    "-prepend-rank": "launcher option: every output line carries its rank, so the output splits into per-rank logs",
    "-localhost": "launcher option: the master's address for the workers' proxies (the hostfile calls it localhost)",
}
ALLOWED_PROGRAM = {
    "wrapper": "rank_exec.sh runs before the interpreter (marks the run's processes, writes per-rank state)",
    "interpreter": "the training virtualenv's python by absolute path, instead of an activated venv's python3",
    "script path": "run_qa.py by absolute path in the examples checkout, instead of `cd` into it",
}
ALLOWED_FLAGS = {
    "--output_dir": "the run's own folder (runs/<id>/output) instead of /tmp/debug_squad/",
    "--overwrite_output_dir": "single-node run only: a rerun writes over its own output folder",
    "--save_strategy": "checkpoints (train_checkpoint_steps): a failed job goes on from the newest one",
    "--save_steps": "every train_checkpoint_steps (500, the Trainer's own default interval)",
    "--save_total_limit": "each node keeps train_checkpoint_keep (2) of them",
    "--save_on_each_node": "every node holds its own copy, so that each rank can resume from it",
}
ALLOWED_ENV = {
    "MASTER_ADDR": "the master's private address on this cluster, not the blog's 172.31.3.190",
    "MASTER_PORT": "exported explicitly: 29500, transformers' default",
    "AMX_CLUSTER_RUN_ID": "marks the run's processes for the clean-up",
    "PYTHONFAULTHANDLER": "a stuck or crashing rank prints its Python stack",
    "TOKENIZERS_PARALLELISM": "no tokenizer threads on top of the OpenMP threads",
    "OMP_NUM_THREADS": "single-node run only: the blog leaves it unset (torch then takes its 32 physical cores); "
    "the role keeps the OS's 6 cores free (26)",
    "KMP_HW_SUBSET": "single-node run only: the blog exports it later, for the cluster run",
    "NUM_PROCESSES": "single-node run only: 1, for the record (the blog exports it later, for the cluster run)",
    "NUM_PROCESSES_PER_NODE": "single-node run only: 1, as NUM_PROCESSES",
}


def parse_exports(text: str) -> dict:
    env = {}
    for line in text.strip().splitlines():
        name, value = line.removeprefix("export ").split("=", 1)
        env[name] = shlex.split(value)[0]
    return env


def blog_argv(text: str, env: dict) -> list:
    """The blog's command as argv, its $VARIABLES replaced with its exports (as the shell would)."""
    text = re.sub(r"\$([A-Z_]+)", lambda match: env[match.group(1)], text)
    return shlex.split(text.replace("\\\n", " "))


def split_launch(argv: list) -> tuple:
    """(launcher options as [(option, value)], program words, script flags as {flag: value})."""
    options = []
    index = 1 if argv[0] == "mpirun" else 0
    if index:
        takes_value = {"-f", "-n", "-ppn", "-genv", "-localhost"}
        while argv[index].startswith("-"):
            option = argv[index]
            if option in takes_value:
                options.append((option, argv[index + 1]))
                index += 2
            else:
                options.append((option, None))
                index += 1
    first_flag = next(i for i in range(index, len(argv)) if argv[i].startswith("--"))
    program = argv[index:first_flag]
    flags = {}
    rest = argv[first_flag:]
    while rest:
        flag = rest.pop(0)
        assert flag not in flags, f"{flag} given twice"
        flags[flag] = rest.pop(0) if rest and not rest[0].startswith("--") else None
    return options, program, flags


def differences(ours: dict, blog: dict) -> dict:
    keys = set(ours) | set(blog)
    return {
        key: (blog.get(key, "<absent>"), ours.get(key, "<absent>"))
        for key in keys
        if ours.get(key, "<absent>") != blog.get(key, "<absent>")
    }


@pytest.fixture(scope="module")
def preset() -> dict:
    return yaml.safe_load(PRESET.read_text())


@pytest.fixture(scope="module")
def values(preset) -> dict:
    """The role's defaults and internal vars with the preset on top (extra vars win)."""
    role = REPO / "roles" / "train"
    merged = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    merged.update(
        {
            k: v
            for k, v in yaml.safe_load((role / "vars" / "main.yml").read_text()).items()
            if k in ("__train_data_defaults", "__train_hub_model", "__train_base_env")
        }
    )
    merged.update(preset)
    return merged


@pytest.fixture(scope="module")
def recipe_stack() -> dict:
    profiles = yaml.safe_load((REPO / "roles" / "torch_stack" / "vars" / "profiles.yml").read_text())
    return profiles


@pytest.fixture(scope="module")
def nodes() -> list:
    """Four r7iz.metal-16xl fact sets (amx_check_topology), each read from the fixture."""
    facts = []
    for _node in range(4):
        cpus = cpu_info.parse_cpuinfo((FIXTURE / "cpuinfo.txt").read_text())
        lscpu = cpu_info.parse_lscpu_json((FIXTURE / "lscpu.json").read_text())
        facts.append(cpu_info.topology(cpus, lscpu))
    return facts


def test_preset_passes_the_stack_preflight_that_the_default_image_fails(preset, recipe_stack):
    resolved = resolve_profile(recipe_stack["__torch_stack_profiles"], preset["torch_stack_profile"])
    yanked = recipe_stack["__torch_stack_yanked"]
    # Ubuntu 20.04 (the preset's image) has Python 3.8.10; the default image, Ubuntu 24.04, has 3.12.3.
    assert profile_problems(resolved, "3.8.10", preset["torch_stack_allow_yanked"], yanked) == []
    refused = profile_problems(resolved, "3.12.3", False, yanked)
    assert len(refused) == 2 and "needs Python 3.8 to 3.10" in refused[0] and "yanked" in refused[1]
    assert "focal-20.04" in preset["ec2_cluster_image_name_pattern"]
    assert preset["ec2_cluster_instance_type"] == "r7iz.metal-16xl" and preset["ec2_cluster_worker_count"] == 3
    assert preset["train_layout_mode"] == "shared"
    assert resolved["pins"]["transformers"] == "4.24.0"


def role_launch(values: dict, nodes: list, recipe_stack: dict) -> dict:
    transformers = recipe_stack["__torch_stack_profiles"][values["torch_stack_profile"]]["packages"]["transformers"]
    world_nodes = len(nodes)
    # preflight.yml: every node's layout (the preset pins ccl workers and the OS's cores), the smallest one wins.
    layouts = [
        rank_layout(
            facts["physical_cores"],
            nodes=world_nodes,
            processes_per_node=values["train_processes_per_node"],
            ccl_workers=values["train_ccl_workers"],
            os_reserved_cores=values["train_os_cores"],
            mode=values["train_layout_mode"],
            omp_num_threads=values["train_omp_threads"],
            ccl_worker_affinity=values["train_ccl_worker_affinity"],
            num_processes=values["train_num_processes"],
        )
        for facts in nodes
    ]
    layout = sorted(layouts, key=lambda item: item["physical_cores"])[0]
    dialect = flag_dialect(
        transformers,
        world_size=layout["num_processes"],
        backend=values["train_backend"],
        oneccl_installed=True,
        ipex_installed=True,
    )
    mpi = mpi_launcher(
        values["train_mpi"], oneccl_installed=True, venv=VENV, packages={}, launcher=values["train_launcher"]
    )
    args = script_args(
        values["train_script"],
        RUN_DIR,
        data=values["train_data"],
        data_defaults=values["__train_data_defaults"],
        model=values["train_model"] or values["__train_hub_model"],
        dataset_name=values["train_dataset_name"],
        epochs=values["train_epochs"],
        batch_size=values["train_batch_size"],
        learning_rate=values["train_learning_rate"],
        max_seq_length=values["train_max_seq_length"],
        doc_stride=values["train_doc_stride"],
        max_steps=values["train_max_steps"],
        logging_steps=values["train_logging_steps"],
        custom_args=values["train_script_args"],
        extra_args=values["train_extra_args"],
        checkpoint_steps=values["train_checkpoint_steps"],
        checkpoint_keep=values["train_checkpoint_keep"],
    )
    # wiring (vars/main.yml __train_hydra_options, __train_env, __train_launch_args)
    options = (
        (["-prepend-rank"] if values["train_prepend_rank"] else [])
        + (["-localhost", MASTER_ADDR] if world_nodes > 1 else [])
        + values["train_launcher_options"]
    )
    env = dict(values["__train_base_env"], AMX_CLUSTER_RUN_ID="blog-1")
    env.update(mpi["env"])
    env.update(values["train_extra_env"])
    launch = launch_command(
        layout,
        dialect,
        f"{VENV}/bin/python",
        [f"{EXAMPLES}/run_qa.py", *args],
        hostfile=values["train_hostfile"],
        python=f"{RUN_DIR}/rank_exec.sh",
        launcher=mpi["launcher"],
        launcher_options=options,
        path_env=mpi["path_env"],
        master_addr=MASTER_ADDR,
        master_port=values["train_master_port"],
        ld_preload=TCMALLOC if values["train_preload_tcmalloc"] else None,
        kmp_hw_subset=values["train_kmp_hw_subset"] or None,
        bf16=values["train_bf16"],
        setvars=SETVARS,
        extra_env=env,
        resume_flag="--resume_from_checkpoint",
    )
    return launch


def test_the_cluster_launch_is_the_blogs_flag_by_flag(values, nodes, recipe_stack):
    launch = role_launch(values, nodes, recipe_stack)
    blog_env = parse_exports(BLOG_EXPORTS)
    blog_options, blog_program, blog_flags = split_launch(blog_argv(BLOG_MPIRUN, blog_env))
    options, program, flags = split_launch(launch["argv"])
    print(f"blog ({BLOG_URL}):\n  " + shlex.join(blog_argv(BLOG_MPIRUN, blog_env)))
    print("role:\n  " + launch["command"])

    assert launch["argv"][0] == "mpirun"  # the binding's Intel MPI, on the PATH once setvars.sh is sourced
    assert launch["setvars"] == shlex.quote(SETVARS)
    seen = set()
    # Launcher options: the blog's, in the blog's order, plus the allowed ones.
    ours_common = [option for option in options if option[0] not in ALLOWED_LAUNCHER]
    assert ours_common == blog_options
    extra = {option for option, _value in options if option in ALLOWED_LAUNCHER}
    assert dict(options).get("-localhost", MASTER_ADDR) == MASTER_ADDR
    seen |= extra
    # The program: wrapper, interpreter, script.
    assert blog_program == ["python3", "run_qa.py"]
    assert program == [f"{RUN_DIR}/rank_exec.sh", f"{VENV}/bin/python", f"{EXAMPLES}/run_qa.py"]
    seen |= {"wrapper", "interpreter", "script path"}
    # The script's flags, flag by flag.
    diff = differences(flags, blog_flags)
    assert set(diff) <= set(ALLOWED_FLAGS), f"not allowed: {sorted(set(diff) - set(ALLOWED_FLAGS))}: {diff}"
    assert diff["--output_dir"][1] == f"{RUN_DIR}/output"
    seen |= set(diff)
    # The environment: the blog's exports and -genv values.
    blog_all = dict(blog_env, **dict(value.split("=", 1) for option, value in blog_options if option == "-genv"))
    ours_all = dict(launch["env"], **launch["genv"])
    env_diff = differences(ours_all, blog_all)
    assert set(env_diff) <= set(ALLOWED_ENV), f"not allowed: {sorted(set(env_diff) - set(ALLOWED_ENV))}: {env_diff}"
    assert env_diff["MASTER_PORT"] == ("<absent>", "29500")
    seen |= set(env_diff)
    # Every difference listed for the cluster run still occurs (MASTER_ADDR does on a real cluster; the single-node
    # ones are checked below).
    single_only = {
        "--overwrite_output_dir",
        "OMP_NUM_THREADS",
        "KMP_HW_SUBSET",
        "NUM_PROCESSES",
        "NUM_PROCESSES_PER_NODE",
        "MASTER_ADDR",
    }
    listed = set(ALLOWED_LAUNCHER) | set(ALLOWED_PROGRAM) | set(ALLOWED_FLAGS) | set(ALLOWED_ENV)
    assert listed - single_only - seen == set(), f"listed but no longer different: {sorted(listed - seen)}"


def test_the_single_node_run_is_the_blogs_one_process_run(values, nodes, recipe_stack):
    assert values["train_single_node_check"] is True and values["train_single_node_steps"] == 0
    transformers = recipe_stack["__torch_stack_profiles"][values["torch_stack_profile"]]["packages"]["transformers"]
    facts = nodes[0]
    job_layout = rank_layout(
        facts["physical_cores"],
        nodes=4,
        processes_per_node=2,
        ccl_workers=2,
        os_reserved_cores=values["train_os_cores"],
        mode=values["train_layout_mode"],
    )
    # single_node.yml: one process, no oneCCL worker, the job's OS share; the whole run (steps null: no bound).
    layout = rank_layout(
        facts["physical_cores"],
        nodes=1,
        processes_per_node=1,
        ccl_workers=0,
        os_reserved_cores=job_layout["os_reserved_cores"],
        omp_num_threads=values["train_omp_threads"],
    )
    dialect = flag_dialect(
        transformers,
        world_size=1,
        oneccl_installed=True,
        ipex_installed=True,
        use_ipex=values["train_single_node_use_ipex"],
    )
    steps = values["train_single_node_steps"]
    args = script_args(
        values["train_script"],
        f"{RUN_DIR}/single",
        data_defaults=values["__train_data_defaults"],
        model=values["train_model"],
        dataset_name=values["train_dataset_name"],
        epochs=values["train_epochs"],
        batch_size=values["train_batch_size"],
        max_steps=steps if steps > 0 else values["train_max_steps"],
        max_eval_samples=64 if steps > 0 else None,
        logging_steps=values["train_logging_steps"],
    )
    launch = launch_command(
        layout,
        dialect,
        f"{VENV}/bin/python",
        [f"{EXAMPLES}/run_qa.py", *args],
        python=f"{RUN_DIR}/rank_exec.sh",
        launcher=None,
        ld_preload=TCMALLOC,
        kmp_hw_subset=values["train_kmp_hw_subset"],
        bf16=values["train_bf16"],
        setvars=SETVARS,
        extra_env=dict(values["__train_base_env"], AMX_CLUSTER_RUN_ID="blog-1"),
    )
    lines = BLOG_SINGLE.strip().splitlines()
    blog_env = parse_exports(lines[0])
    _none, blog_program, blog_flags = split_launch(shlex.split(" ".join(lines[1:]).replace("\\", " ")))
    _none, program, flags = split_launch(launch["argv"])
    print(f"blog ({BLOG_URL}):\n  " + " ".join(lines[1:]).replace("\\", ""))
    print("role:\n  " + launch["command"])
    assert blog_program == ["python", "run_qa.py"]
    assert program == [f"{RUN_DIR}/rank_exec.sh", f"{VENV}/bin/python", f"{EXAMPLES}/run_qa.py"]
    assert "mpirun" not in launch["argv"] and launch["genv"] == {}
    diff = differences(flags, blog_flags)
    assert set(diff) == {"--output_dir", "--overwrite_output_dir"}, diff
    assert "--max_steps" not in flags and "--max_eval_samples" not in flags
    env_diff = differences(launch["env"], blog_env)
    assert set(env_diff) <= set(ALLOWED_ENV) - {"MASTER_ADDR", "MASTER_PORT"}, env_diff
    assert env_diff["OMP_NUM_THREADS"] == ("<absent>", "26")
    assert launch["env"]["LD_PRELOAD"] == blog_env["LD_PRELOAD"]


@pytest.mark.parametrize("role", ["ec2_cluster", "torch_stack", "hf_examples", "train"])
def test_the_preset_passes_the_roles_argument_specs(preset, role):
    """Every preset variable of a role is one of its options, of the right type (as its entry point checks it)."""
    specs = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    options = specs["main"]["options"]
    mine = {name: value for name, value in preset.items() if name.startswith(role + "_")}
    assert mine and set(mine) <= set(options), sorted(set(mine) - set(options))
    result = ArgumentSpecValidator(options).validate(mine)
    assert result.error_messages == []


def test_every_preset_variable_belongs_to_a_role(preset):
    roles = ("ec2_cluster_", "torch_stack_", "hf_examples_", "train_")
    assert [name for name in preset if not name.startswith(roles)] == []
