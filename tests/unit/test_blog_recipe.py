# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The blog preset (playbooks/vars/blog-recipe.yml) renders the blog's launch, flag by flag.

The launch is rendered from the roles' own files: Ansible's Templar renders the expressions of the train role's
tasks that compute the layout, the dialect, the launcher, the script's arguments and the launch (tasks/
preflight_layout.yml, preflight_launcher.yml, script_args.yml, prepare.yml, single_node.yml), over its defaults,
vars/main.yml and vars/Debian.yml with the preset on top (as extra vars), through the collection's real filters.
tcmalloc's path is the one amx.cluster.tcmalloc's tasks pick from the linker cache of an Ubuntu 20.04 node with
libgoogle-perftools-dev. What only a live node gives is fabricated and named in ``node_facts``: four r7iz.metal-16xl
topologies read from the fixture tests/unit/fixtures/cpu/spr_metal_r7iz, the stack's versions, the paths.
Every difference from the blog is listed in ALLOWED_* by name; a difference not listed fails, and so does a listed
one that no longer occurs.
"""

from __future__ import annotations

import json
import math
import pathlib
import re
import shlex
import subprocess
import sys

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from blog_render import EXAMPLES, HOME, MASTER_ADDR, RUN_ID, SETVARS, VENV

from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import profile_problems, resolve_profile

REPO = pathlib.Path(__file__).resolve().parents[2]
PRESET = REPO / "playbooks" / "vars" / "blog-recipe.yml"
RENDER = REPO / "tests" / "support" / "blog_render.py"
RUN_DIR = f"{HOME}/amx-cluster-runs/{RUN_ID}"

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

# SQuAD v1.1's training set as run_qa.py's preprocessing cuts it for distilbert-base-uncased (max_seq_length 384,
# doc_stride 128): 87,599 questions give 88,524 features, the examples one epoch steps through.
SQUAD_TRAIN_FEATURES = 88524

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
    "--save_steps": "every 150 steps (the preset's train_checkpoint_steps): two checkpoints in the 4-node epoch",
    "--save_total_limit": "each node keeps train_checkpoint_keep (2) of them",
    "--save_on_each_node": "every node holds its own copy, so that each rank can resume from it",
}
ALLOWED_ENV = {
    "MASTER_ADDR": "the master's private address on this cluster, not the blog's 172.31.3.190",
    "MASTER_PORT": "exported explicitly: 29500, transformers' default",
    "AMX_CLUSTER_RUN_ID": "marks the run's processes for the clean-up",
    "PYTHONFAULTHANDLER": "a stuck or crashing rank prints its Python stack",
    "TOKENIZERS_PARALLELISM": "no tokenizer threads on top of the OpenMP threads",
    "LD_PRELOAD": "tcmalloc by its versioned soname libtcmalloc.so.4, which amx.cluster.tcmalloc picks (the runtime "
    "package always has it; the blog's unversioned libtcmalloc.so comes only with the -dev package): the same file",
    "NUM_PROCESSES": "single-node run only: 1, for the record (the blog exports it later, for the cluster run)",
    "NUM_PROCESSES_PER_NODE": "single-node run only: 1, as NUM_PROCESSES",
}
SINGLE_ONLY = {"--overwrite_output_dir", "NUM_PROCESSES", "NUM_PROCESSES_PER_NODE"}


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


def render(overrides: dict | None = None) -> dict:
    """What the role writes for the preset (with ``overrides`` on top), from tests/support/blog_render.py."""
    done = subprocess.run(
        [sys.executable, str(RENDER), str(PRESET), json.dumps(overrides or {})],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def preset() -> dict:
    return yaml.safe_load(PRESET.read_text())


@pytest.fixture(scope="module")
def recipe_stack() -> dict:
    return yaml.safe_load((REPO / "roles" / "torch_stack" / "vars" / "profiles.yml").read_text())


@pytest.fixture(scope="module")
def rendered() -> dict:
    return render()


def test_tcmalloc_is_the_versioned_soname_the_role_picks(rendered):
    assert rendered["ld_preload"] == "/lib/x86_64-linux-gnu/libtcmalloc.so.4"


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


def test_the_cluster_launch_is_the_blogs_flag_by_flag(rendered):
    launch = rendered["job"]
    blog_env = parse_exports(BLOG_EXPORTS)
    blog_options, blog_program, blog_flags = split_launch(blog_argv(BLOG_MPIRUN, blog_env))
    options, program, flags = split_launch(launch["argv"])
    print(f"blog ({BLOG_URL}):\n  " + shlex.join(blog_argv(BLOG_MPIRUN, blog_env)))
    print("role:\n  " + launch["command"])

    assert launch["argv"][0] == "mpirun"  # the binding's Intel MPI, on the PATH once setvars.sh is sourced
    assert launch["setvars"] == shlex.quote(SETVARS)
    seen = set()
    # Launcher options: the blog's, in the blog's order, plus the allowed ones (-genv values are compared with the
    # environment below).
    ours_common = [(o, v.split("=")[0] if o == "-genv" else v) for o, v in options if o not in ALLOWED_LAUNCHER]
    assert ours_common == [(o, v.split("=")[0] if o == "-genv" else v) for o, v in blog_options]
    extra = {option for option, _value in options if option in ALLOWED_LAUNCHER}
    assert dict(options).get("-localhost") == MASTER_ADDR
    seen |= extra
    # The program: wrapper, interpreter, script.
    assert blog_program == ["python3", "run_qa.py"]
    assert program == [f"{RUN_DIR}/rank_exec.sh", f"{VENV}/bin/python", f"{EXAMPLES}/run_qa.py"]
    seen |= {"wrapper", "interpreter", "script path"}
    # The script's flags, flag by flag.
    diff = differences(flags, blog_flags)
    assert set(diff) <= set(ALLOWED_FLAGS), f"not allowed: {sorted(set(diff) - set(ALLOWED_FLAGS))}: {diff}"
    assert diff["--output_dir"][1] == f"{RUN_DIR}/output"
    assert flags["--save_steps"] == "150"
    seen |= set(diff)
    # The environment: the blog's exports and -genv values.
    blog_all = dict(blog_env, **dict(value.split("=", 1) for option, value in blog_options if option == "-genv"))
    ours_all = dict(launch["env"], **launch["genv"])
    env_diff = differences(ours_all, blog_all)
    assert set(env_diff) <= set(ALLOWED_ENV), f"not allowed: {sorted(set(env_diff) - set(ALLOWED_ENV))}: {env_diff}"
    assert env_diff["MASTER_PORT"] == ("<absent>", "29500")
    assert env_diff["LD_PRELOAD"] == ("/usr/lib/x86_64-linux-gnu/libtcmalloc.so", rendered["ld_preload"])
    seen |= set(env_diff)
    # Every difference listed for the cluster run still occurs (MASTER_ADDR does on a real cluster, whose address is
    # not the blog's; the single-node ones are checked below).
    listed = set(ALLOWED_LAUNCHER) | set(ALLOWED_PROGRAM) | set(ALLOWED_FLAGS) | set(ALLOWED_ENV)
    assert listed - SINGLE_ONLY - {"MASTER_ADDR"} - seen == set(), (
        f"listed but no longer different: {sorted(listed - seen)}"
    )


def test_the_single_node_run_is_the_posts_one_process_run(rendered, preset):
    assert preset["train_single_node_check"] is True and preset["train_single_node_steps"] == 0
    assert preset["train_single_node_variant"] == "post"
    launch = rendered["single"]
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
    allowed_single = set(ALLOWED_ENV) - {"MASTER_ADDR", "MASTER_PORT"}
    assert set(env_diff) == allowed_single, f"not allowed or no longer different: {env_diff}"
    # The post's: OMP_NUM_THREADS unset (torch takes every physical core), no KMP_HW_SUBSET, no pinning, no setvars.
    assert not {"OMP_NUM_THREADS", "KMP_HW_SUBSET", "AMX_CLUSTER_RANK_CPUS"} & set(launch["env"])
    assert launch["setvars"] is None and "setvars" not in rendered["single_script"]
    assert rendered["single_script"] == launch["script"]


def test_the_cluster_env_variant_gives_the_one_process_the_cluster_runs_environment():
    launch = render({"train_single_node_variant": "cluster_env"})["single"]
    # 32 physical cores - the OS's 6: the single-node figure the docs call the cluster_env variant's.
    assert launch["env"]["OMP_NUM_THREADS"] == "26" and launch["env"]["KMP_HW_SUBSET"] == "1T"
    assert launch["setvars"] == shlex.quote(SETVARS)


def test_the_preset_checkpoints_twice_in_its_4_node_epoch(rendered, preset):
    layout = rendered["layout"]
    assert layout["num_processes"] == 8
    steps = math.ceil(SQUAD_TRAIN_FEATURES / (preset["train_batch_size"] * layout["num_processes"]))
    assert steps == 346
    interval = rendered["checkpoint_steps"]
    assert steps // interval >= 2, f"--save_steps {interval} writes {steps // interval} checkpoint(s) in {steps} steps"
    # The Trainer's default, which the preset used to keep, writes none.
    assert steps // 500 == 0


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
