# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Launch rendering: the environment and the exact ``mpirun`` command of a training run.

:func:`launch_env` and :func:`launch_command` take a layout (:mod:`.layout`) and a flag dialect
(:mod:`.dialect`) and render what the recipe types by hand on the master::

    source <oneCCL setvars.sh>                      # when the oneCCL binding is installed
    export MASTER_ADDR=... NUM_PROCESSES=... NUM_PROCESSES_PER_NODE=... \\
           CCL_WORKER_COUNT=... CCL_WORKER_AFFINITY=... KMP_HW_SUBSET=1T
    mpirun -f ~/hosts -n N -ppn M [LAUNCHER OPTIONS] -genv OMP_NUM_THREADS=T -genv LD_PRELOAD=... \\
           python3 SCRIPT ARGS... DIALECT FLAGS... [--bf16]

Hydra launchers (MPICH, Intel MPI) hand the exported environment to every rank on every node;
``-genv`` sets a variable for all ranks explicitly. Both take the launcher options this collection
uses (``-prepend-rank``, ``-localhost ADDR``, ``-iface IF``) on the command line: Intel MPI ignores
MPICH's ``HYDRA_CONFIG_FILE``, so options never travel through it. :func:`script_args` builds the
training script's own arguments, :func:`mpi_launcher` picks the launcher and its environment.
Standard library only (runs on targets too).
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.amx.cluster.plugins.module_utils.train_agent import RESUME_VAR

GENV_DEFAULT = ("OMP_NUM_THREADS", "LD_PRELOAD")
# What the layout sets for the OpenMP threads and the pinning (launch_env's leave_unset may leave them to the program).
LAYOUT_VARIABLES = ("OMP_NUM_THREADS", "KMP_HW_SUBSET", "AMX_CLUSTER_RANK_CPUS", "AMX_CLUSTER_RANK_OMP_CPUS")
MPI_IMPLEMENTATIONS = ("mpich", "intel")
SCRIPTS = ("qa_finetune", "run_qa", "custom")
IMPI_PACKAGE = "impi-rt"
ONECCL_SETVARS = "\"$({python} -c 'from oneccl_bindings_for_pytorch import cwd; print(cwd)')/env/setvars.sh\""
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class LaunchError(ValueError):
    """The layout, dialect and arguments do not make a runnable launch; the message says why."""


def shell_quote(arg: str) -> str:
    """Quote one argument for a POSIX shell, keeping a leading ``~/`` unquoted so it still expands."""
    if arg.startswith("~/") and len(arg) > 2:
        return "~/" + shlex.quote(arg[2:])
    return shlex.quote(arg)


def shell_join(argv: Sequence[str]) -> str:
    return " ".join(shell_quote(str(arg)) for arg in argv)


def _check_name(name: str) -> str:
    if not _NAME.match(str(name)):
        raise LaunchError(f"{name!r} is not a valid environment variable name")
    return str(name)


def launch_env(
    layout: Mapping[str, Any],
    dialect: Mapping[str, Any],
    master_addr: Optional[str] = None,
    master_port: Any = None,
    ld_preload: Optional[str] = None,
    kmp_hw_subset: Optional[str] = "1T",
    extra_env: Optional[Mapping[str, Any]] = None,
    leave_unset: Sequence[str] = (),
) -> Dict[str, str]:
    """All variables of the run, in the recipe's order, as strings.

    ``MASTER_ADDR`` (required across nodes and for ccl even on one node), ``MASTER_PORT`` when
    given (transformers defaults to 29500), ``NUM_PROCESSES``, ``NUM_PROCESSES_PER_NODE``, the
    ``CCL_*`` variables when the backend is ccl, ``KMP_HW_SUBSET`` (physical cores only; acts
    with Intel OpenMP), ``OMP_NUM_THREADS``, ``LD_PRELOAD`` (the node's tcmalloc) and ``extra_env``.
    ``leave_unset`` names variables of the layout (:data:`LAYOUT_VARIABLES`) not to set, so that the program
    picks its own (the post's single-node run leaves ``OMP_NUM_THREADS`` to torch: every physical core);
    ``extra_env`` still sets any of them.
    """
    unknown = sorted(set(leave_unset) - set(LAYOUT_VARIABLES))
    if unknown:
        raise LaunchError(
            "leave_unset names {}: only the layout's variables ({}) can be left unset".format(
                ", ".join(unknown), ", ".join(LAYOUT_VARIABLES)
            )
        )
    for key in ("num_processes", "processes_per_node", "nodes", "omp_num_threads", "ccl_worker_count"):
        if key not in layout:
            raise LaunchError(f"layout lacks {key!r}: pass the result of rank_layout")
    for key in ("backend", "world_size", "flags"):
        if key not in dialect:
            raise LaunchError(f"dialect lacks {key!r}: pass the result of flag_dialect")
    world = int(layout["num_processes"])
    if int(dialect["world_size"]) != world:
        raise LaunchError(
            f"the dialect was computed for {dialect['world_size']} processes but the layout has {world}: "
            f"call flag_dialect with world_size={world}"
        )
    backend = dialect["backend"]
    workers = int(layout["ccl_worker_count"])
    if backend == "ccl" and workers < 1:
        raise LaunchError(
            "backend ccl needs CCL_WORKER_COUNT >= 1 (transformers refuses 0): set ccl_workers in the layout"
        )
    if not master_addr and (int(layout["nodes"]) > 1 or backend == "ccl"):
        reason = f"the job spans {int(layout['nodes'])} nodes" if int(layout["nodes"]) > 1 else "backend ccl"
        raise LaunchError(f"MASTER_ADDR is required ({reason}): pass master_addr, the master's private address")

    env: Dict[str, str] = {}
    if master_addr:
        env["MASTER_ADDR"] = str(master_addr)
    if master_port not in (None, ""):
        port = str(master_port)
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise LaunchError(f"master_port must be a TCP port number (1-65535), got {master_port!r}")
        env["MASTER_PORT"] = port
    env["NUM_PROCESSES"] = str(world)
    env["NUM_PROCESSES_PER_NODE"] = str(int(layout["processes_per_node"]))
    if backend == "ccl":
        env["CCL_WORKER_COUNT"] = str(workers)
        env["CCL_WORKER_AFFINITY"] = str(layout.get("ccl_worker_affinity") or "auto")
    if kmp_hw_subset:
        env["KMP_HW_SUBSET"] = str(kmp_hw_subset)
    env["OMP_NUM_THREADS"] = str(int(layout["omp_num_threads"]))
    # The per-local-rank cpulists of a pinned layout, for the rank wrapper (rank_exec.sh) to pin each rank.
    for name in ("AMX_CLUSTER_RANK_CPUS", "AMX_CLUSTER_RANK_OMP_CPUS"):
        if (layout.get("env") or {}).get(name):
            env[name] = str(layout["env"][name])
    for name in leave_unset:
        env.pop(name, None)
    if ld_preload:
        env["LD_PRELOAD"] = str(ld_preload)
    for name, value in (extra_env or {}).items():
        env[_check_name(name)] = str(value)
    return env


def launch_command(
    layout: Mapping[str, Any],
    dialect: Mapping[str, Any],
    script: str,
    script_args: Optional[Sequence[Any]] = None,
    hostfile: str = "~/hosts",
    python: str = "python3",
    launcher: Optional[str] = "mpirun",
    master_addr: Optional[str] = None,
    master_port: Any = None,
    ld_preload: Optional[str] = None,
    kmp_hw_subset: Optional[str] = "1T",
    bf16: bool = False,
    setvars: Optional[str] = None,
    extra_env: Optional[Mapping[str, Any]] = None,
    genv_names: Sequence[str] = GENV_DEFAULT,
    launcher_options: Optional[Sequence[Any]] = None,
    path_env: Optional[Mapping[str, Any]] = None,
    resume_flag: Optional[str] = None,
    leave_unset: Sequence[str] = (),
    source_setvars: bool = True,
) -> Dict[str, Any]:
    """Render the launch: ``argv`` (list), ``command`` (shell-quoted string), ``env`` (exported
    before the launcher), ``genv`` (passed with ``-genv NAME=VALUE``), ``setvars`` (the oneCCL
    ``setvars.sh`` line to source, or None) and ``script`` (a bash script doing all of it).

    The argument order is the recipe's: script arguments, then the dialect's flags, then
    ``--bf16``. Script arguments must not repeat a dialect flag (the dialect owns them).
    ``launcher=None`` renders a plain one-process run (``python3 SCRIPT ...`` with every
    variable exported), for the single-node check. ``launcher_options`` go right after ``-ppn``
    (``-prepend-rank``, ``-localhost ADDR``: MPICH and Intel MPI take both). ``path_env`` maps a
    variable to a folder put in front of its current value in the script
    (``export LD_LIBRARY_PATH=DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}``), for Intel MPI's libraries.
    ``resume_flag`` (``--resume_from_checkpoint``) ends the script's command with that flag and the value of
    ``AMX_CLUSTER_RESUME_FROM`` when an attempt of the job sets it, and with nothing otherwise: every attempt
    runs the same script (``argv`` leaves the flag out). ``leave_unset`` goes to :func:`launch_env`;
    ``source_setvars=False`` sources no oneCCL ``setvars.sh`` even where the binding is installed (the post's
    single-node run: one process, no oneCCL, no Intel MPI).
    """
    if not script:
        raise LaunchError("script is required: the training script to run (for example run_qa.py)")
    args = [str(arg) for arg in (script_args or [])]
    owned = [flag for flag in dialect.get("flags", []) if flag.startswith("--")] + (["--bf16"] if bf16 else [])
    clashes = sorted({arg.split("=", 1)[0] for arg in args} & set(owned))
    if clashes:
        raise LaunchError(
            "script_args repeat {}, which the launch adds itself (from the dialect or bf16): remove them".format(
                ", ".join(clashes)
            )
        )
    variables = launch_env(
        layout, dialect, master_addr, master_port, ld_preload, kmp_hw_subset, extra_env, leave_unset=leave_unset
    )
    world = int(layout["num_processes"])
    if launcher is None and world != 1:
        raise LaunchError(f"launcher=None runs one process, but the layout has {world}: use mpirun")
    options = [str(option) for option in (launcher_options or [])]
    if options and not launcher:
        raise LaunchError("launcher_options need a launcher: a one-process run (launcher=None) takes none")
    prepended = {_check_name(name): str(value) for name, value in (path_env or {}).items()}
    for name in prepended:
        if name in variables:
            raise LaunchError(f"{name} is given both in path_env and as a variable of the run: keep one")

    genv: Dict[str, str] = {}
    env: Dict[str, str] = {}
    for name, value in variables.items():
        if launcher and name in genv_names:
            genv[name] = value
        else:
            env[name] = value

    tail = [str(python), str(script), *args, *[str(flag) for flag in dialect["flags"]]]
    if bf16:
        tail.append("--bf16")
    if launcher:
        argv = [str(launcher), "-f", str(hostfile), "-n", str(world), "-ppn", str(int(layout["processes_per_node"]))]
        argv.extend(options)
        for name in genv_names:
            if name in genv:
                argv.extend(["-genv", f"{name}={genv[name]}"])
        argv.extend(tail)
    else:
        argv = tail

    source: Optional[str] = None
    if source_setvars and (dialect.get("oneccl_installed") or dialect.get("backend") == "ccl"):
        source = shell_quote(str(setvars)) if setvars else ONECCL_SETVARS.format(python=shlex.quote(str(python)))

    command = shell_join(argv)
    if resume_flag:
        if not str(resume_flag).startswith("--") or shell_quote(str(resume_flag)) != str(resume_flag):
            raise LaunchError(f"resume_flag must be a plain --flag, got {resume_flag!r}")
        command += f' ${{{RESUME_VAR}:+{resume_flag} "${RESUME_VAR}"}}'
    lines = ["#!/usr/bin/env bash", "set -eo pipefail"]
    if source:
        lines.append("# shellcheck disable=SC1090")
        lines.append(f"source {source}")
    lines.extend(f"export {name}={shlex.quote(value)}" for name, value in env.items())
    lines.extend(f"export {name}={shlex.quote(value)}${{{name}:+:${name}}}" for name, value in prepended.items())
    lines.append(f"exec {command}")
    return {
        "argv": argv,
        "command": command,
        "env": env,
        "genv": genv,
        "setvars": source,
        "path_env": prepended,
        "script": "\n".join(lines) + "\n",
    }


def _knob(name: str, value: Any, default: Any, minimum: Optional[float] = None) -> Any:
    """The value of a training knob: ``value`` unless it is None, else ``default``; numbers are checked."""
    chosen = default if value is None else value
    if chosen is None or minimum is None:
        return chosen
    try:
        number = float(chosen)
    except (TypeError, ValueError):
        raise LaunchError(f"{name} must be a number, got {chosen!r}") from None
    if isinstance(chosen, bool) or number < minimum:
        raise LaunchError(f"{name} must be a number >= {minimum:g}, got {chosen!r}")
    return chosen


def script_args(
    script: str,
    run_dir: str,
    data: str = "tiny",
    data_defaults: Optional[Mapping[str, Mapping[str, Any]]] = None,
    model: Optional[str] = None,
    dataset_name: str = "squad",
    train_file: Optional[str] = None,
    validation_file: Optional[str] = None,
    epochs: Any = None,
    batch_size: Any = None,
    learning_rate: Any = None,
    max_seq_length: Any = None,
    doc_stride: Any = None,
    max_steps: Any = None,
    max_eval_samples: Any = None,
    logging_steps: Any = 10,
    measure_only: bool = False,
    custom_args: Optional[Sequence[Any]] = None,
    extra_args: Optional[Sequence[Any]] = None,
    checkpoint_steps: Any = 0,
    checkpoint_keep: Any = 2,
) -> List[str]:
    """The training script's own arguments (without the dialect flags and ``--bf16``, which
    :func:`launch_command` adds), in the recipe's order::

        --model_name_or_path M (--dataset_name D | --train_file F --validation_file V)
        --do_train [--do_eval] --per_device_train_batch_size B --num_train_epochs E
        [--logging_steps L] --output_dir RUN_DIR/output --overwrite_output_dir
        [--learning_rate] [--max_seq_length] [--doc_stride] [--max_steps] [--max_eval_samples]
        [--save_strategy steps --save_steps S --save_total_limit K --save_on_each_node]
        [qa_finetune: --metrics_file RUN_DIR/metrics.json --progress_file RUN_DIR/progress.jsonl [--no_save]]
        EXTRA_ARGS...

    ``script``: ``run_qa`` (transformers' example, Hub model and data set ``dataset_name``),
    ``qa_finetune`` (the collection's script on local files) or ``custom`` (``custom_args`` as
    given). A knob left at None takes ``data_defaults[kind]`` (kind ``hub`` for run_qa, else
    ``data``), then the recipe's 1 epoch and batch 32. ``logging_steps`` None or 0 leaves the flag out
    (the script's own default). ``max_steps`` / ``max_eval_samples`` bound a run; ``measure_only``
    leaves out the evaluation (and qa_finetune's saving of the model): a run that is only timed.
    ``checkpoint_steps`` > 0 saves a checkpoint every that many steps on every node (each rank resumes from
    its own node's copy), the newest ``checkpoint_keep`` kept; a timed run saves none.
    """
    if script not in SCRIPTS:
        raise LaunchError("script must be one of {}, got {!r}".format(", ".join(SCRIPTS), script))
    extra = [str(arg) for arg in (extra_args or [])]
    if custom_args is not None:
        if isinstance(custom_args, (str, bytes)) or not isinstance(custom_args, Sequence):
            raise LaunchError(f"custom_args must be a list of arguments, got {custom_args!r}")
        return [str(arg) for arg in custom_args] + extra
    if script == "custom":
        raise LaunchError("script custom needs its own arguments: set custom_args (train_script_args)")
    if not run_dir:
        raise LaunchError("run_dir is required: the folder of the run's output")
    kind = "hub" if script == "run_qa" else str(data)
    defaults = dict((data_defaults or {}).get(kind) or {})
    epochs = _knob("epochs", epochs, defaults.get("epochs", 1), 0)
    batch = _knob("batch_size", batch_size, defaults.get("batch_size", 32), 1)
    rate = _knob("learning_rate", learning_rate, defaults.get("learning_rate"), 0)
    seq = _knob("max_seq_length", max_seq_length, defaults.get("max_seq_length"), 1)
    stride = _knob("doc_stride", doc_stride, defaults.get("doc_stride"), 1)
    steps = _knob("max_steps", max_steps, None, 1)
    evals = _knob("max_eval_samples", max_eval_samples, None, 1)
    logging = _knob("logging_steps", logging_steps or None, None, 1)
    every = _knob("checkpoint_steps", checkpoint_steps, 0, 0)
    keep = _knob("checkpoint_keep", checkpoint_keep, 2, 1)

    if script == "run_qa":
        if not model:
            raise LaunchError("run_qa needs a model: a Hub name such as distilbert-base-uncased")
        args = ["--model_name_or_path", str(model), "--dataset_name", str(dataset_name)]
    else:
        missing = [
            name
            for name, value in (("model", model), ("train_file", train_file), ("validation_file", validation_file))
            if not value
        ]
        if missing:
            raise LaunchError("qa_finetune needs {} (local paths on every node)".format(", ".join(missing)))
        args = [
            "--model_name_or_path",
            str(model),
            "--train_file",
            str(train_file),
            "--validation_file",
            str(validation_file),
        ]
    args.append("--do_train")
    if not measure_only:
        args.append("--do_eval")
    args += ["--per_device_train_batch_size", str(batch), "--num_train_epochs", str(epochs)]
    if logging is not None:
        args += ["--logging_steps", str(logging)]
    args += ["--output_dir", f"{run_dir}/output", "--overwrite_output_dir"]
    for flag, value in (
        ("--learning_rate", rate),
        ("--max_seq_length", seq),
        ("--doc_stride", stride),
        ("--max_steps", steps),
        ("--max_eval_samples", evals),
    ):
        if value is not None:
            args += [flag, str(value)]
    if int(every) > 0 and not measure_only:
        args += ["--save_strategy", "steps", "--save_steps", str(every), "--save_total_limit", str(keep)]
        args.append("--save_on_each_node")
    if script == "qa_finetune":
        args += ["--metrics_file", f"{run_dir}/metrics.json", "--progress_file", f"{run_dir}/progress.jsonl"]
        if measure_only:
            args.append("--no_save")
    return args + extra


def mpi_launcher(
    implementation: str = "mpich",
    oneccl_installed: bool = False,
    venv: Optional[str] = None,
    packages: Optional[Mapping[str, Any]] = None,
    launcher: Optional[str] = None,
    mpich_launcher: str = "mpirun",
) -> Dict[str, Any]:
    """Which MPI launches the job, and what its ``mpirun`` needs.

    With the oneCCL binding installed, its Intel MPI (``mpirun`` on the PATH once ``setvars.sh``
    is sourced), as in the recipe. Otherwise ``implementation`` picks ``mpich`` (the distribution's
    package; ``mpich_launcher`` is its path) or ``intel`` (the ``impi-rt`` package in the training
    virtualenv ``venv``: its ``mpiexec.hydra``, with ``I_MPI_ROOT`` and ``FI_PROVIDER_PATH`` set to
    the virtualenv and its ``lib`` put in front of ``LD_LIBRARY_PATH``). ``launcher`` overrides the
    path. The result: ``implementation`` (``intel`` or ``mpich``), ``source`` (``oneccl``, ``impi-rt``
    or ``os``), ``launcher``, ``env`` and ``path_env`` for :func:`launch_command`, and
    ``install_mpich`` (whether the distribution's MPICH is needed).
    """
    if implementation not in MPI_IMPLEMENTATIONS:
        raise LaunchError(
            "the MPI implementation must be one of {}, got {!r}".format(", ".join(MPI_IMPLEMENTATIONS), implementation)
        )
    if oneccl_installed:
        return {
            "implementation": "intel",
            "source": "oneccl",
            "launcher": launcher or "mpirun",
            "env": {},
            "path_env": {},
            "install_mpich": False,
        }
    if implementation == "mpich":
        return {
            "implementation": "mpich",
            "source": "os",
            "launcher": launcher or mpich_launcher,
            "env": {},
            "path_env": {},
            "install_mpich": True,
        }
    names = {str(name).lower().replace("_", "-") for name in (packages or {})}
    if IMPI_PACKAGE not in names:
        raise LaunchError(
            "Intel MPI without the oneCCL binding comes from the impi-rt package in the training virtualenv, which "
            "it lacks: add impi-rt to torch_stack_extra_packages (and run provision.yml), or use MPICH"
        )
    if not venv or not str(venv).startswith("/"):
        raise LaunchError(f"venv must be the training virtualenv's absolute path, got {venv!r}")
    root = str(venv).rstrip("/")
    return {
        "implementation": "intel",
        "source": IMPI_PACKAGE,
        "launcher": launcher or f"{root}/bin/mpiexec.hydra",
        "env": {"I_MPI_ROOT": root, "FI_PROVIDER_PATH": f"{root}/lib"},
        "path_env": {"LD_LIBRARY_PATH": f"{root}/lib"},
        "install_mpich": False,
    }
