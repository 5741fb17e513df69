# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
import os
import shlex
import string
import subprocess

import pytest

from ansible_collections.amx.cluster.plugins.module_utils.dialect import flag_dialect
from ansible_collections.amx.cluster.plugins.module_utils.launch import (
    LaunchError,
    launch_command,
    launch_env,
    mpi_launcher,
    script_args,
    shell_join,
    shell_quote,
)
from ansible_collections.amx.cluster.plugins.module_utils.layout import rank_layout

# The recipe, as typed on the master (4 x r7iz, transformers 4.24, oneCCL binding installed).
RECIPE_EXPORTS = """
export MASTER_ADDR=172.31.3.190
export NUM_PROCESSES=8
export NUM_PROCESSES_PER_NODE=2
export CCL_WORKER_COUNT=2
export CCL_WORKER_AFFINITY=auto
export KMP_HW_SUBSET=1T
"""
RECIPE_MPIRUN = r"""
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
RECIPE_COMMAND = (
    "mpirun -f ~/hosts -n 8 -ppn 2 -genv OMP_NUM_THREADS=24 -genv LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc.so "
    "python3 run_qa.py --model_name_or_path distilbert-base-uncased --dataset_name squad --do_train --do_eval "
    "--per_device_train_batch_size 32 --num_train_epochs 1 --output_dir /tmp/debug_squad/ --overwrite_output_dir "
    "--no_cuda --xpu_backend ccl --bf16"
)
RECIPE_SCRIPT_ARGS = [
    "--model_name_or_path",
    "distilbert-base-uncased",
    "--dataset_name",
    "squad",
    "--do_train",
    "--do_eval",
    "--per_device_train_batch_size",
    "32",
    "--num_train_epochs",
    "1",
    "--output_dir",
    "/tmp/debug_squad/",
    "--overwrite_output_dir",
]
TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc.so"


def recipe_launch(**overrides):
    layout = rank_layout(32, nodes=4, processes_per_node=2, ccl_workers=2, os_reserved_cores=6)
    dialect = flag_dialect("4.24.0", world_size=8, oneccl_installed=True, ipex_installed=True)
    kwargs = {
        "script_args": RECIPE_SCRIPT_ARGS,
        "hostfile": "~/hosts",
        "master_addr": "172.31.3.190",
        "ld_preload": TCMALLOC,
        "bf16": True,
    }
    kwargs.update(overrides)
    return launch_command(layout, dialect, "run_qa.py", **kwargs)


def recipe_exports():
    return dict(line[len("export ") :].split("=", 1) for line in RECIPE_EXPORTS.strip().splitlines())


def test_recipe_command_string_for_string():
    assert recipe_launch()["command"] == RECIPE_COMMAND


def test_recipe_command_matches_the_typed_recipe_word_for_word():
    typed = string.Template(RECIPE_MPIRUN.replace("\\\n", " ")).substitute(recipe_exports())
    assert recipe_launch()["argv"] == shlex.split(typed)


def test_recipe_environment():
    launch = recipe_launch()
    assert launch["env"] == recipe_exports()
    assert list(launch["env"]) == list(recipe_exports())  # the recipe's order
    assert launch["genv"] == {"OMP_NUM_THREADS": "24", "LD_PRELOAD": TCMALLOC}
    assert launch["setvars"] == (
        "\"$(python3 -c 'from oneccl_bindings_for_pytorch import cwd; print(cwd)')/env/setvars.sh\""
    )


def test_recipe_script_is_valid_bash_with_the_exports_and_the_command():
    script = recipe_launch()["script"]
    lines = script.splitlines()
    assert lines[0] == "#!/usr/bin/env bash"
    assert lines[-1] == "exec " + RECIPE_COMMAND
    for name, value in recipe_exports().items():
        assert f"export {name}={value}" in lines
    assert lines.index("source " + recipe_launch()["setvars"]) < lines.index("export MASTER_ADDR=172.31.3.190")
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)


def test_setvars_path_given():
    launch = recipe_launch(setvars="/opt/my env/setvars.sh")
    assert launch["setvars"] == "'/opt/my env/setvars.sh'"


def test_local_gloo_run_on_this_machine():
    layout = rank_layout(2, processes_per_node=2, mode="partitioned")
    dialect = flag_dialect("5.24.0", world_size=2)
    launch = launch_command(
        layout,
        dialect,
        "/srv/train/qa_finetune.py",
        ["--output_dir", "/tmp/out dir"],
        hostfile="/home/u/hosts",
        python="/srv/venv/bin/python",
        master_addr="127.0.0.1",
        master_port=29555,
        kmp_hw_subset=None,
    )
    assert launch["argv"] == [
        "mpirun",
        "-f",
        "/home/u/hosts",
        "-n",
        "2",
        "-ppn",
        "2",
        "-genv",
        "OMP_NUM_THREADS=1",
        "/srv/venv/bin/python",
        "/srv/train/qa_finetune.py",
        "--output_dir",
        "/tmp/out dir",
        "--use_cpu",
        "--ddp_backend",
        "gloo",
    ]
    assert launch["command"].endswith("--output_dir '/tmp/out dir' --use_cpu --ddp_backend gloo")
    assert launch["env"] == {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29555",
        "NUM_PROCESSES": "2",
        "NUM_PROCESSES_PER_NODE": "2",
    }
    assert launch["setvars"] is None
    assert "source" not in launch["script"]


def test_single_node_check_without_launcher():
    layout = rank_layout(32, os_reserved_cores=6)
    dialect = flag_dialect("4.24.0", 1, ipex_installed=True, use_ipex=True)
    launch = launch_command(
        layout, dialect, "run_qa.py", ["--output_dir", "/tmp/x"], launcher=None, ld_preload=TCMALLOC
    )
    assert launch["argv"] == ["python3", "run_qa.py", "--output_dir", "/tmp/x", "--no_cuda", "--use_ipex"]
    assert launch["genv"] == {}
    assert launch["env"]["OMP_NUM_THREADS"] == "26"
    assert launch["env"]["LD_PRELOAD"] == TCMALLOC


def test_the_posts_single_node_run_leaves_the_threads_to_torch_and_sources_no_setvars():
    # Pinned (socket mode) and with the oneCCL binding installed: what the post's run leaves out is all there first.
    topology = {"socket_cores": [{"socket": 0, "numa_nodes": [0], "cores": list(range(32))}]}
    layout = rank_layout(32, os_reserved_cores=6, mode="socket", topology=topology)
    dialect = flag_dialect("4.24.0", 1, oneccl_installed=True, ipex_installed=True, use_ipex=True)
    cluster_env = launch_command(layout, dialect, "run_qa.py", launcher=None, ld_preload=TCMALLOC)
    assert cluster_env["env"]["OMP_NUM_THREADS"] == "26" and cluster_env["env"]["AMX_CLUSTER_RANK_CPUS"]
    assert cluster_env["setvars"] and "source " in cluster_env["script"]
    post = launch_command(
        layout,
        dialect,
        "run_qa.py",
        launcher=None,
        ld_preload=TCMALLOC,
        leave_unset=["OMP_NUM_THREADS", "KMP_HW_SUBSET", "AMX_CLUSTER_RANK_CPUS", "AMX_CLUSTER_RANK_OMP_CPUS"],
        source_setvars=False,
        extra_env={"PYTHONFAULTHANDLER": "1"},
    )
    assert post["env"] == {
        "NUM_PROCESSES": "1",
        "NUM_PROCESSES_PER_NODE": "1",
        "LD_PRELOAD": TCMALLOC,
        "PYTHONFAULTHANDLER": "1",
    }
    assert post["setvars"] is None and "source " not in post["script"]
    # The user's own variables still win.
    mine = launch_command(
        layout, dialect, "run_qa.py", launcher=None, leave_unset=["OMP_NUM_THREADS"], extra_env={"OMP_NUM_THREADS": 8}
    )
    assert mine["env"]["OMP_NUM_THREADS"] == "8"
    with pytest.raises(LaunchError, match="leave_unset names LD_PRELOAD: only the layout's variables"):
        launch_command(layout, dialect, "run_qa.py", launcher=None, leave_unset=["LD_PRELOAD"])


def test_launch_env_merges_everything_in_order():
    layout = rank_layout(32, nodes=4, processes_per_node=2, ccl_workers=2, os_reserved_cores=6)
    dialect = flag_dialect("4.24.0", world_size=8, oneccl_installed=True)
    env = launch_env(layout, dialect, master_addr="10.0.0.1", ld_preload=TCMALLOC, extra_env={"FI_PROVIDER": "tcp"})
    assert list(env) == [
        "MASTER_ADDR",
        "NUM_PROCESSES",
        "NUM_PROCESSES_PER_NODE",
        "CCL_WORKER_COUNT",
        "CCL_WORKER_AFFINITY",
        "KMP_HW_SUBSET",
        "OMP_NUM_THREADS",
        "LD_PRELOAD",
        "FI_PROVIDER",
    ]


def test_gloo_run_leaves_ccl_variables_out_even_with_workers_in_the_layout():
    layout = rank_layout(8, nodes=2, processes_per_node=2, ccl_workers=1)
    env = launch_env(layout, flag_dialect("5.24.0", 4), master_addr="10.0.0.1")
    assert "CCL_WORKER_COUNT" not in env
    assert "CCL_WORKER_AFFINITY" not in env


@pytest.mark.parametrize(
    ("layout_args", "dialect_args", "kwargs", "message"),
    [
        (
            (32, 4, 2, 2, 6),
            ("4.24.0", 4, "ccl", True),
            {"master_addr": "a"},
            "computed for 4 processes but the layout has 8",
        ),
        ((32, 1, 2, 0, 6), ("4.24.0", 2, "ccl", True), {"master_addr": "a"}, "backend ccl needs CCL_WORKER_COUNT >= 1"),
        ((32, 4, 2, 2, 6), ("4.24.0", 8, "ccl", True), {}, "MASTER_ADDR is required (the job spans 4 nodes)"),
        ((32, 1, 2, 2, 6), ("4.24.0", 2, "ccl", True), {}, "MASTER_ADDR is required (backend ccl)"),
        ((32, 1, 2), ("5.24.0", 2), {"master_port": "http"}, "master_port must be a TCP port number"),
        ((32, 1, 2), ("5.24.0", 2), {"master_port": 70000}, "master_port must be a TCP port number"),
        ((32, 1, 2), ("5.24.0", 2), {"extra_env": {"BAD-NAME": "1"}}, "'BAD-NAME' is not a valid environment variable"),
        ((32, 1, 2), ("5.24.0", 2), {"script_args": ["--use_cpu"]}, "script_args repeat --use_cpu"),
        ((32, 1, 2), ("5.24.0", 2), {"script_args": ["--ddp_backend=gloo"]}, "script_args repeat --ddp_backend"),
        ((32, 1, 2), ("5.24.0", 2), {"script_args": ["--bf16"], "bf16": True}, "script_args repeat --bf16"),
        ((32, 1, 2), ("5.24.0", 2), {"launcher": None}, "launcher=None runs one process, but the layout has 2"),
        ((32, 1, 2), ("5.24.0", 2), {"script": ""}, "script is required"),
    ],
)
def test_inconsistent_launches_are_refused(layout_args, dialect_args, kwargs, message):
    layout = rank_layout(*layout_args)
    version, world, *rest = dialect_args
    dialect = flag_dialect(
        version, world, backend=rest[0] if rest else "auto", oneccl_installed=rest[1] if len(rest) > 1 else False
    )
    script = kwargs.pop("script", "train.py")
    with pytest.raises(LaunchError) as error:
        launch_command(layout, dialect, script, **kwargs)
    assert message in str(error.value)


def test_launch_refuses_something_that_is_not_a_layout():
    with pytest.raises(LaunchError, match="layout lacks 'num_processes'"):
        launch_command({}, flag_dialect("5.24.0", 1), "train.py")
    with pytest.raises(LaunchError, match="dialect lacks 'backend'"):
        launch_command(rank_layout(4), {}, "train.py")


@pytest.mark.parametrize(
    ("arg", "quoted"),
    [
        ("~/hosts", "~/hosts"),
        ("~/my hosts", "~/'my hosts'"),
        ("~", "'~'"),
        ("a b", "'a b'"),
        ("it's", "'it'\"'\"'s'"),
        ("--x=1", "--x=1"),
    ],
)
def test_shell_quote(arg, quoted):
    assert shell_quote(arg) == quoted


def test_shell_join_round_trips_through_the_shell():
    argv = ["printf", "%s\\n", "a b", "it's", "$HOME", "~/x", "*"]
    out = subprocess.run(["bash", "-c", shell_join(argv)], capture_output=True, text=True, check=True).stdout
    home = subprocess.run(["bash", "-c", "echo ~"], capture_output=True, text=True, check=True).stdout.strip()
    assert out.splitlines() == ["a b", "it's", "$HOME", home + "/x", "*"]


# --- script_args: the script's own arguments, from the knobs (what tasks/script_args.yml used to decide in Jinja).

DATA_DEFAULTS = {
    "hub": {"epochs": 1, "batch_size": 32},
    "files": {"epochs": 1, "batch_size": 32},
    "tiny": {"epochs": 8, "batch_size": 16, "learning_rate": 3.0e-3, "max_seq_length": 96, "doc_stride": 32},
}


def test_script_args_for_run_qa_are_the_recipes():
    args = script_args(
        "run_qa", "/tmp/debug_squad", data_defaults=DATA_DEFAULTS, model="distilbert-base-uncased", logging_steps=None
    )
    assert args == [*RECIPE_SCRIPT_ARGS[:11], "/tmp/debug_squad/output", "--overwrite_output_dir"]
    assert script_args("run_qa", "/tmp/debug_squad", model="distilbert-base-uncased", logging_steps=0) == args


def test_script_args_for_the_tiny_data_take_its_defaults_and_the_bounds():
    args = script_args(
        "qa_finetune",
        "/r",
        data="tiny",
        data_defaults=DATA_DEFAULTS,
        model="/m",
        train_file="/t",
        validation_file="/v",
        max_steps=20,
        max_eval_samples=64,
    )
    assert args == [
        "--model_name_or_path", "/m", "--train_file", "/t", "--validation_file", "/v", "--do_train", "--do_eval",
        "--per_device_train_batch_size", "16", "--num_train_epochs", "8", "--logging_steps", "10",
        "--output_dir", "/r/output", "--overwrite_output_dir", "--learning_rate", "0.003", "--max_seq_length", "96",
        "--doc_stride", "32", "--max_steps", "20", "--max_eval_samples", "64",
        "--metrics_file", "/r/metrics.json", "--progress_file", "/r/progress.jsonl",
    ]  # fmt: skip


def test_script_args_measure_only_drops_the_evaluation_and_the_saving():
    args = script_args(
        "qa_finetune",
        "/r",
        data="files",
        data_defaults=DATA_DEFAULTS,
        model="/m",
        train_file="/t",
        validation_file="/v",
        epochs=2,
        batch_size=8,
        measure_only=True,
        extra_args=["--seed", 3],
    )
    assert "--do_eval" not in args and args[-3:] == ["--no_save", "--seed", "3"]
    assert (
        args[args.index("--num_train_epochs") + 1] == "2"
        and args[args.index("--per_device_train_batch_size") + 1] == "8"
    )


def test_script_args_custom_are_passed_as_given():
    assert script_args("custom", "/r", custom_args=["--a", 1], extra_args=["--b"]) == ["--a", "1", "--b"]
    assert script_args("run_qa", "/r", custom_args=[]) == []


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        (("train",), {}, "script must be one of qa_finetune, run_qa, custom"),
        (("custom", "/r"), {}, "script custom needs its own arguments"),
        (("run_qa", "/r"), {}, "run_qa needs a model"),
        (("qa_finetune", "/r"), {"model": "/m"}, "qa_finetune needs train_file, validation_file"),
        (("run_qa", "/r"), {"model": "m", "batch_size": 0}, "batch_size must be a number >= 1, got 0"),
        (("run_qa", "/r"), {"model": "m", "epochs": "x"}, "epochs must be a number, got 'x'"),
        (("run_qa", "/r"), {"model": "m", "custom_args": "--a 1"}, "custom_args must be a list"),
        (("run_qa", ""), {"model": "m"}, "run_dir is required"),
    ],
)
def test_script_args_refuses_what_cannot_run(args, kwargs, message):
    if len(args) == 1:
        args = (args[0], "/r")
    with pytest.raises(LaunchError, match=message):
        script_args(*args, **kwargs)


# --- mpi_launcher: which MPI, and what its mpirun needs.


def test_the_oneccl_binding_brings_intel_mpi_whatever_train_mpi_says():
    for implementation in ("mpich", "intel"):
        chosen = mpi_launcher(implementation, oneccl_installed=True)
        assert chosen == {
            "implementation": "intel",
            "source": "oneccl",
            "launcher": "mpirun",
            "env": {},
            "path_env": {},
            "install_mpich": False,
        }


def test_mpich_is_the_default_without_the_binding():
    chosen = mpi_launcher(mpich_launcher="/usr/lib64/mpich/bin/mpirun")
    assert chosen["implementation"] == "mpich" and chosen["install_mpich"] is True
    assert chosen["launcher"] == "/usr/lib64/mpich/bin/mpirun"
    assert mpi_launcher("mpich", launcher="/opt/mpirun")["launcher"] == "/opt/mpirun"


def test_intel_mpi_from_impi_rt_in_the_venv():
    chosen = mpi_launcher("intel", venv="/opt/amx-cluster/venv/", packages={"impi_rt": "2021.18.1", "torch": "2"})
    assert chosen == {
        "implementation": "intel",
        "source": "impi-rt",
        "launcher": "/opt/amx-cluster/venv/bin/mpiexec.hydra",
        "env": {"I_MPI_ROOT": "/opt/amx-cluster/venv", "FI_PROVIDER_PATH": "/opt/amx-cluster/venv/lib"},
        "path_env": {"LD_LIBRARY_PATH": "/opt/amx-cluster/venv/lib"},
        "install_mpich": False,
    }


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"implementation": "openmpi"}, "must be one of mpich, intel, got 'openmpi'"),
        ({"implementation": "intel", "venv": "/v", "packages": {"torch": "2"}}, "add impi-rt to torch_stack_extra"),
        ({"implementation": "intel", "venv": "venv", "packages": {"impi-rt": "1"}}, "absolute path"),
    ],
)
def test_mpi_launcher_refuses_what_cannot_launch(kwargs, message):
    with pytest.raises(LaunchError, match=message):
        mpi_launcher(**kwargs)


# --- launcher options and prepended paths.


def test_launcher_options_go_right_after_ppn():
    launch = recipe_launch(launcher_options=["-prepend-rank", "-localhost", "172.31.3.190"])
    assert launch["argv"][:9] == ["mpirun", "-f", "~/hosts", "-n", "8", "-ppn", "2", "-prepend-rank", "-localhost"]
    assert "HYDRA_CONFIG_FILE" not in launch["script"]


def test_a_one_process_run_takes_no_launcher_options():
    layout = rank_layout(4)
    dialect = flag_dialect("4.24.0")
    with pytest.raises(LaunchError, match="launcher_options need a launcher"):
        launch_command(layout, dialect, "x.py", launcher=None, launcher_options=["-prepend-rank"])


def test_path_env_is_put_in_front_of_the_current_value(tmp_path):
    launch = recipe_launch(path_env={"LD_LIBRARY_PATH": "/opt/v/lib"}, launcher="true", setvars="/dev/null")
    assert "export LD_LIBRARY_PATH=/opt/v/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n" in launch["script"]
    # The script as written, its launch replaced by a look at the variable (bash runs it for real).
    script = tmp_path / "probe.sh"
    script.write_text(launch["script"].split("\nexec ", maxsplit=1)[0] + "\nprintenv LD_LIBRARY_PATH\n")
    for before, after in (("", "/opt/v/lib"), ("/usr/lib/x", "/opt/v/lib:/usr/lib/x")):
        env = {"PATH": "/usr/bin:/bin"} | ({"LD_LIBRARY_PATH": before} if before else {})
        done = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, check=True)
        assert done.stdout.strip() == after
    with pytest.raises(LaunchError, match="LD_PRELOAD is given both in path_env and as a variable"):
        recipe_launch(path_env={"LD_PRELOAD": "/x"})


def test_script_args_save_checkpoints_on_every_node_except_in_a_timed_run():
    common = {"model": "/m", "train_file": "/t", "validation_file": "/v", "checkpoint_keep": 3}
    args = script_args("qa_finetune", "/r", checkpoint_steps=20, **common)
    saving = ["--save_strategy", "steps", "--save_steps", "20", "--save_total_limit", "3", "--save_on_each_node"]
    at = args.index("--save_strategy")
    assert args[at : at + len(saving)] == saving
    assert "--save_steps" not in script_args("qa_finetune", "/r", measure_only=True, checkpoint_steps=20, **common)
    assert "--save_steps" not in script_args("qa_finetune", "/r", checkpoint_steps=0, **common)
    with pytest.raises(LaunchError, match="checkpoint_keep must be a number >= 1"):
        script_args("qa_finetune", "/r", model="/m", train_file="/t", validation_file="/v", checkpoint_keep=0)


def test_the_resume_flag_is_passed_only_when_an_attempt_sets_the_checkpoint(tmp_path):
    layout = rank_layout(2, processes_per_node=2, mode="partitioned")
    launch = launch_command(
        layout,
        flag_dialect("5.24.0", world_size=2),
        "/srv/train/qa_finetune.py",
        ["--output_dir", "/tmp/out"],
        hostfile="/etc/hosts-of-the-run",
        launcher=str(tmp_path / "mpirun"),
        resume_flag="--resume_from_checkpoint",
    )
    # A launcher that prints the arguments it was given, one per line.
    (tmp_path / "mpirun").write_text('#!/usr/bin/env bash\nprintf "%s\\n" "$@"\n')
    (tmp_path / "mpirun").chmod(0o755)
    (tmp_path / "launch.sh").write_text(launch["script"])

    def argv(**env):
        done = subprocess.run(
            ["bash", str(tmp_path / "launch.sh")],
            env=dict(os.environ, **env),
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    assert argv() == launch["argv"][1:], "without a checkpoint to go on from, the command as rendered"
    assert argv(AMX_CLUSTER_RESUME_FROM="/runs/r 1/output/checkpoint-40")[-2:] == [
        "--resume_from_checkpoint",
        "/runs/r 1/output/checkpoint-40",
    ]
    assert "--resume_from_checkpoint" not in launch["argv"]
    with pytest.raises(LaunchError, match="resume_flag must be a plain --flag"):
        launch_command(layout, flag_dialect("5.24.0", world_size=2), "s.py", resume_flag="--x; rm -rf /")
