# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks of user input that every role runs before its first change: folders, launch inputs, the MPI hostfile.

Pure functions (standard library only, Python 3.8+): each returns a list of problems, one sentence each, that name
the variable and what is wrong, and never quote the content of a file. An empty list means the input is good.

- :func:`folder_problems`: a folder variable must not name a system folder (``/``, ``/tmp``, ``/usr``, the user's
  home itself...): the roles create their folders with an owner and a mode, and such a folder is never theirs.
  :data:`SYSTEM_FOLDERS` is the one list every role uses.
- :func:`launch_problems`: the inputs of a training launch (environment variable names and values, argument
  lists, the numeric knobs, the run id), checked with the same rules the launch applies, before anything is
  written.
- :func:`hostfile_problems`: an MPI hostfile against the cluster's node aliases, by line number only.
"""

from __future__ import annotations

import math
import posixpath
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.amx.cluster.plugins.module_utils.launch import LaunchError, _check_name

# Folders of the system, of the FHS and of the usual distributions: never a role's own folder, so never created,
# re-owned or re-moded by one. Subfolders (/opt/amx-cluster/venv, /tmp/runs) are fine.
SYSTEM_FOLDERS = (
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/dev/shm",
    "/etc",
    "/home",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/lost+found",
    "/media",
    "/mnt",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/snap",
    "/srv",
    "/sys",
    "/tmp",
    "/usr",
    "/usr/bin",
    "/usr/include",
    "/usr/lib",
    "/usr/lib64",
    "/usr/libexec",
    "/usr/local",
    "/usr/local/bin",
    "/usr/local/lib",
    "/usr/local/share",
    "/usr/sbin",
    "/usr/share",
    "/usr/src",
    "/var",
    "/var/cache",
    "/var/lib",
    "/var/local",
    "/var/log",
    "/var/mail",
    "/var/opt",
    "/var/spool",
    "/var/tmp",
    "/var/www",
)

# Folders of a user's home that hold the user's own settings and keys: never a role's folder either.
HOME_FOLDERS = ("", ".ssh", ".config", ".cache", ".local", ".local/bin", ".local/share", ".ansible", ".gnupg")

RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
HOST_LINE = re.compile(r"(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)(?::(?P<slots>[0-9]+))?")


def normalize_folder(path: str) -> str:
    """The folder a path names, written one way: repeated and trailing slashes, '.' and '..' resolved lexically."""
    text = re.sub(r"/+", "/", str(path))
    normal = posixpath.normpath(text) if text else text
    return "/" if normal == "//" else normal


def system_folder(path: str, home: Optional[str] = None) -> Optional[str]:
    """What the system folder `path` is ('a system folder', 'the home folder of the user', ...), or None."""
    normal = normalize_folder(path)
    if normal in SYSTEM_FOLDERS:
        return "a system folder"
    if home and normalize_folder(home) not in ("", "/"):
        base = normalize_folder(home)
        for name in HOME_FOLDERS:
            if normal == (posixpath.join(base, name).rstrip("/") if name else base):
                return "the user's home folder" if not name else f"the user's own {name} folder"
    if normal.startswith("/home/") and normal.count("/") == 2:
        return "a home folder"
    return None


def folder_problems(
    folders: Mapping[str, Any],
    home: Optional[str] = None,
    absolute: bool = True,
    resolved: Optional[Mapping[str, Any]] = None,
) -> List[str]:
    """Problems of the folder variables `folders` (variable name -> path; empty or None values are left out).

    A folder must be absolute (unless `absolute` is false) and must not be a system folder or the user's home
    (`home`). `resolved` (variable name -> the path the folder resolves to, where it is a symbolic link) is
    checked the same way, so that a link to /tmp is refused too."""
    problems: List[str] = []
    for name, path in folders.items():
        if path is None or path == "":
            continue
        if not isinstance(path, str):
            problems.append(f"{name} must be a path (a string), got a {kind(path)}")
            continue
        if absolute and not path.startswith("/"):
            problems.append(f"{name} is {path!r}, not an absolute path")
            continue
        what = system_folder(path, home)
        if what:
            problems.append(f"{name} is {path!r}, {what}")
            continue
        target = (resolved or {}).get(name)
        if target and isinstance(target, str):
            what = system_folder(target, home)
            if what:
                problems.append(f"{name} is {path!r}, a link to {target!r}, {what}")
    return problems


def role_folders_problem(found: List[str], example: str) -> List[str]:
    """The one message for a role's folder variables that folder_problems refused (none when it refused none)."""
    if not found:
        return []
    return [
        f"{'; '.join(found)}. The role creates its folders with an owner and a mode, which must never happen to a "
        f"folder of the system or of a user: set {'it' if len(found) == 1 else 'them'} to a folder of its own, such "
        f"as {example}."
    ]


def existing_folder_problem(
    name: str, folder: str, stat: Mapping[str, Any], writable: Optional[bool], user: str, home: Optional[str]
) -> List[str]:
    """An existing folder that a role uses as it is: a folder (or a link to one) of its own, writable by `user`.
    `stat` is amx.cluster.folder_info's entry for the folder, `writable` whether `user` may write there."""
    links = folder_problems({name: folder}, resolved={name: stat.get("lnk_source") or ""}, home=home)
    if links or not (stat.get("isdir") or stat.get("islnk")):
        what = "; ".join(links) if links else f"{name} {folder} exists but is not a folder"
        return [f"{what}. Set {name} to a folder of its own (nothing was changed)."]
    if writable is False:
        return [
            f"{name} {folder} exists and is not writable by {user}. The role uses an existing folder as it is and "
            f"never changes its owner or mode: make it writable by {user} yourself, or set {name} to another folder "
            f"(an absent one is created for {user})."
        ]
    return []


def kind(value: Any) -> str:
    """The kind of a value in YAML's words (Ansible hands over its own subclasses of list, dict and str)."""
    if value is None:
        return "null"
    for name, types in (("bool", bool), ("str", str), ("int", int), ("float", float), ("mapping", Mapping)):
        if isinstance(value, types):
            return name
    if isinstance(value, (list, tuple, set)):
        return "list"
    return type(value).__name__


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _bound(problems: List[str], name: str, value: Any, low: float, integer: bool, allow: Sequence[Any] = ()) -> None:
    if value is None or value in allow:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        problems.append(f"{name} must be a number, got {kind(value)}")
        return
    try:
        number = float(value)
    except ValueError:
        problems.append(f"{name} must be a number, got {str(value)[:40]!r}")
        return
    if integer and number != int(number):
        problems.append(f"{name} must be a whole number, got {value}")
    elif number < low or math.isnan(number) or math.isinf(number):
        problems.append(f"{name} must be at least {low:g}, got {value}")


def _string_list(problems: List[str], name: str, value: Any, required: bool = False) -> None:
    if value is None and not required:
        return
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        problems.append(
            f"{name} must be a list of strings (one item per argument), got a {kind(value)}"
            + (": write it as a YAML list, such as ['--seed', '1']" if isinstance(value, str) else "")
        )
        return
    bad = [
        index for index, item in enumerate(value) if not isinstance(item, (str, int, float)) or isinstance(item, bool)
    ]
    if bad:
        problems.append(
            "{} must hold strings, but item{} {} {} a list, a mapping or a boolean".format(
                name, "s" if len(bad) > 1 else "", ", ".join(str(i) for i in bad), "are" if len(bad) > 1 else "is"
            )
        )


def launch_problems(inputs: Mapping[str, Any]) -> List[str]:
    """Problems of the training launch's inputs, by the role's variable names (all optional in `inputs`):

    - ``train_extra_env``: a mapping of environment variable names (the launch's rule: letters, digits and '_',
      not starting with a digit) to scalar values;
    - ``train_secret_env``: the same, for values that must never be written anywhere (never quoted here either);
    - ``train_extra_args``, ``train_script_args`` (null allowed), ``train_launcher_options``, ``train_ssh_options``:
      lists of strings;
    - the flags (``train_bf16``, ``train_prepend_rank``, ``train_rerun``, ...): booleans, not lists or mappings;
    - ``train_epochs`` > 0, ``train_batch_size``, ``train_max_steps``, ``train_logging_steps``,
      ``train_scaling_steps``, ``train_single_node_steps`` >= 1 (``train_max_steps`` also -1: no limit; the
      logging and single-node steps also 0),
      ``train_max_seq_length`` >= 8 and ``train_doc_stride`` >= 1, ``train_learning_rate`` > 0;
    - ``train_run_id``: empty, or a whole folder name (letters, digits, '.', '_', '-'; nothing after it, not even a
      newline).
    """
    problems: List[str] = []
    env = inputs.get("train_extra_env")
    if env is not None:
        if not isinstance(env, Mapping):
            problems.append(f"train_extra_env must be a mapping of variable names to values, got a {kind(env)}")
        else:
            for name, value in env.items():
                try:
                    _check_name(name)
                except LaunchError:
                    problems.append(
                        f"train_extra_env has {str(name)[:60]!r}, which is not an environment variable name "
                        "(letters, digits and '_', not starting with a digit)"
                    )
                    continue
                if not _is_scalar(value):
                    problems.append(f"train_extra_env's {name} must be a string or a number, got a {kind(value)}")
    secret = inputs.get("train_secret_env")
    if secret is not None:
        if not isinstance(secret, Mapping):
            problems.append(f"train_secret_env must be a mapping of variable names to values, got a {kind(secret)}")
        else:
            for name, value in secret.items():
                try:
                    _check_name(name)
                except LaunchError:
                    problems.append(
                        f"train_secret_env has {str(name)[:60]!r}, which is not an environment variable name "
                        "(letters, digits and '_', not starting with a digit)"
                    )
                    continue
                # The value is a secret: its type may be named, never the value.
                if not _is_scalar(value):
                    problems.append(f"train_secret_env's {name} must be a string, got a {kind(value)}")
            clash = sorted(set(map(str, secret)) & set(map(str, env))) if isinstance(env, Mapping) else []
            if clash:
                problems.append(f"{', '.join(clash)} is in both train_extra_env and train_secret_env: keep it in one")
    for name in ("train_extra_args", "train_launcher_options", "train_ssh_options"):
        if name in inputs:
            _string_list(problems, name, inputs[name], required=True)
    if "train_script_args" in inputs:
        _string_list(problems, "train_script_args", inputs["train_script_args"])
    flags = (
        "train_bf16",
        "train_prepend_rank",
        "train_rerun",
        "train_resume",
        "train_preload_tcmalloc",
        "train_fetch_results",
    )
    for name in flags:
        value = inputs.get(name)
        if value is not None and not isinstance(value, (bool, str, int)):
            problems.append(f"{name} must be true or false, got a {kind(value)}")
    for name in ("train_kmp_hw_subset", "train_master_addr", "train_launcher", "train_python", "train_script_path"):
        value = inputs.get(name)
        if value is not None and not isinstance(value, (str, int, float)):
            problems.append(f"{name} must be a string, got a {kind(value)}")
    _bound(problems, "train_epochs", inputs.get("train_epochs"), 1e-9, integer=False)
    _bound(problems, "train_learning_rate", inputs.get("train_learning_rate"), 1e-12, integer=False)
    for name in ("train_batch_size", "train_doc_stride", "train_scaling_steps", "train_checkpoint_keep"):
        _bound(problems, name, inputs.get(name), 1, integer=True)
    # 0 is documented for these two: no --logging_steps, and the whole single-node run.
    for name in ("train_logging_steps", "train_single_node_steps"):
        _bound(problems, name, inputs.get(name), 1, integer=True, allow=(0, "0"))
    _bound(problems, "train_checkpoint_steps", inputs.get("train_checkpoint_steps"), 0, integer=True)
    _bound(problems, "train_max_steps", inputs.get("train_max_steps"), 1, integer=True, allow=(-1, "-1"))
    _bound(problems, "train_max_seq_length", inputs.get("train_max_seq_length"), 8, integer=True)
    run_id = inputs.get("train_run_id")
    if run_id not in (None, "") and (not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id)):
        problems.append(
            f"train_run_id {run_id!r} cannot name a folder: use letters, digits, '.', '_' and '-' "
            "(starting with a letter or digit, nothing else, not even a newline)"
        )
    return problems


def hostfile_problems(text: str, aliases: Sequence[str]) -> Dict[str, Any]:
    """Compare an MPI hostfile's text with the cluster's aliases in hostfile order (localhost, node1...).

    Returns ``hosts`` (the aliases the file lists, in order, when every line is one of them), ``problems``
    (sentences that name line numbers and aliases only: a line that is not a host of the cluster is never quoted,
    since the file may be something else entirely, such as a key) and ``ok``. Comments (#...) and blank lines are
    left out; ``host:slots`` is a host."""
    known = [str(alias) for alias in aliases]
    hosts: List[str] = []
    problems: List[str] = []
    foreign: List[int] = []
    malformed: List[int] = []
    for number, line in enumerate(str(text).splitlines(), start=1):
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        found = HOST_LINE.fullmatch(entry)
        if not found:
            malformed.append(number)
        elif found.group("host") not in known:
            foreign.append(number)
        else:
            hosts.append(found.group("host"))

    def lines(numbers: List[int]) -> str:
        shown = ", ".join(str(n) for n in numbers[:10]) + (
            f" and {len(numbers) - 10} more" if len(numbers) > 10 else ""
        )
        return ("line " if len(numbers) == 1 else "lines ") + shown

    if malformed:
        problems.append(
            f"{lines(malformed)} {'is' if len(malformed) == 1 else 'are'} not a hostfile line (host or host:slots)"
        )
    if foreign:
        problems.append(f"{lines(foreign)} {'names a host' if len(foreign) == 1 else 'name hosts'} outside the cluster")
    if not malformed and not foreign and hosts != known:
        problems.append(f"it lists {', '.join(hosts) or 'nothing'}")
    return {"ok": not problems, "hosts": hosts if not (malformed or foreign) else [], "problems": problems}
