# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The controller's download of a wheelhouse, shared by torch_stack and hf_examples (the amx.cluster.wheelhouse_fetch
action runs it).

One download is a folder of the controller cache. It is made as ``DEST.partial`` (emptied first), filled with the
given files, the node's marker values and the wheels pip downloads, the wheels optionally packed into one
``wheels.tar``, and renamed to ``DEST`` when all of that worked: a folder at ``DEST`` is a complete download, and an
interrupted one is never taken for one. pip runs from an argument vector, never through a shell, so a path with a
quote or a space is only a path.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tarfile
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.amx.cluster.plugins.module_utils.examples import controller_command, marker_environment

# The runner that hands pip the node's marker values (run as a script by the controller pip's Python).
RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pip_node_markers.py")
MARKERS_FILE = "markers.json"
TAR_FILE = "wheels.tar"
STDERR_LINES = 6


class WheelhouseError(ValueError):
    """Input or state that stops a download before or while it runs; the message says what to change."""


class DownloadFailed(WheelhouseError):
    """pip returned non-zero; ``rc`` and the last lines of its error output are kept for the message."""

    def __init__(self, rc: int, stderr_tail: List[str]) -> None:
        super().__init__(f"pip exited with {rc}")
        self.rc = rc
        self.stderr_tail = stderr_tail


def partial_dir(dest: str) -> str:
    """The folder a download of ``dest`` is made in."""
    return os.path.abspath(dest) + ".partial"


def download_command(
    pip: Sequence[Any], args: Sequence[Any], markers_file: Optional[str] = None, variable: str = "controller_pip"
) -> List[str]:
    """The argument vector that runs the controller's ``pip`` (``[PYTHON, -m, pip, ...]``) on ``args``; with
    ``markers_file``, through the runner, which evaluates environment markers with the node's values from that file
    (``variable`` names the pip command in the error when it is not of that form)."""
    if isinstance(pip, (str, bytes)) or not pip or not all(isinstance(arg, str) and arg for arg in pip):
        raise WheelhouseError(f"{variable} must be a list of non-empty strings, got {pip!r}")
    head = [str(arg) for arg in pip]
    if markers_file is not None:
        head = controller_command(head, RUNNER, markers_file, variable)
    return head + [str(arg) for arg in args]


def _check_names(files: Mapping[str, Any]) -> Dict[str, str]:
    checked = {}
    for name, content in files.items():
        if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\0" in name:
            raise WheelhouseError(f"files: {name!r} is not a plain file name")
        if name in (MARKERS_FILE, TAR_FILE):
            raise WheelhouseError(f"files: {name} is written by the download itself")
        if not isinstance(content, str):
            raise WheelhouseError(f"files: the content of {name} must be text")
        checked[name] = content
    return checked


def _pack(folder: str, wheels: Sequence[str]) -> None:
    """Move the folder's wheels into one tar (one transfer per node instead of one per wheel)."""
    with tarfile.open(os.path.join(folder, TAR_FILE), "w") as archive:
        for name in wheels:
            archive.add(os.path.join(folder, name), arcname=name, recursive=False)
    for name in wheels:
        os.unlink(os.path.join(folder, name))


def _checked(
    dest: str,
    pip: Sequence[Any],
    args: Sequence[Any],
    files: Optional[Mapping[str, Any]],
    markers: Optional[Mapping[str, Any]],
    variable: str,
) -> Tuple[Dict[str, str], Optional[Dict[str, str]], List[str]]:
    """Every input of a download checked: the files by name, the node's marker values and pip's argument vector."""
    if os.path.lexists(dest) and not os.path.isdir(dest):
        raise WheelhouseError(f"{dest} exists and is not a folder: remove it, it is no download of the collection")
    checked = _check_names(files or {})
    node = marker_environment(markers) if markers is not None else None
    markers_file = os.path.join(partial_dir(dest), MARKERS_FILE) if node is not None else None
    return checked, node, download_command(pip, args, markers_file, variable)


def fetch(
    dest: str,
    pip: Sequence[Any],
    args: Sequence[Any],
    files: Optional[Mapping[str, Any]] = None,
    markers: Optional[Mapping[str, Any]] = None,
    pack: bool = False,
    check_mode: bool = False,
    variable: str = "controller_pip",
    locked: Optional[Callable[[], None]] = None,
) -> Dict[str, Any]:
    """Download into the controller cache folder ``dest`` unless it is there: ``pip download`` with ``args`` (which
    name ``partial_dir(dest)`` for pip's ``--dest`` and for the given files), after writing ``files`` (name: text)
    and, with ``markers`` (the node's PEP 508 values), ``markers.json`` there. Returns changed, cached, path and
    wheels (the names downloaded; empty when cached). Every input is checked before anything on disk changes.
    ``locked`` is called once this call holds the cache's lock (``start_fetch`` waits for that)."""
    dest = os.path.abspath(dest)
    work = partial_dir(dest)
    if os.path.isdir(dest):
        return {"changed": False, "cached": True, "path": dest, "wheels": []}
    checked, node, argv = _checked(dest, pip, args, files, markers, variable)
    if check_mode:
        return {"changed": True, "cached": False, "path": dest, "wheels": []}

    # Two controller runs may want the same download at once (two plays, or a test suite beside another): the
    # second waits for the first and then finds the folder complete. The lock is the cache folder's own (no file).
    cache = os.path.dirname(dest)
    os.makedirs(cache, mode=0o755, exist_ok=True)
    lock = os.open(cache, os.O_RDONLY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if locked is not None:
            locked()
        if os.path.isdir(dest):
            return {"changed": False, "cached": True, "path": dest, "wheels": []}
        return _download(dest, work, argv, checked, node, pack)
    finally:
        os.close(lock)


def _download(
    dest: str,
    work: str,
    argv: List[str],
    checked: Mapping[str, str],
    node: Optional[Mapping[str, Any]],
    pack: bool,
) -> Dict[str, Any]:
    if os.path.isdir(work) and not os.path.islink(work):
        shutil.rmtree(work)
    elif os.path.lexists(work):
        os.unlink(work)
    os.makedirs(work, mode=0o755)
    os.chmod(work, 0o755)
    for name, content in checked.items():
        with open(os.path.join(work, name), "w", encoding="utf-8") as handle:
            handle.write(content)
    if node is not None:
        with open(os.path.join(work, MARKERS_FILE), "w", encoding="utf-8") as handle:
            handle.write(json.dumps(node, indent=2, sort_keys=True) + "\n")
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise DownloadFailed(done.returncode, (done.stderr or "").splitlines()[-STDERR_LINES:])
    wheels = sorted(name for name in os.listdir(work) if name.endswith(".whl"))
    if pack:
        _pack(work, wheels)
    os.rename(work, dest)
    return {"changed": True, "cached": False, "path": dest, "wheels": wheels}


def start_fetch(
    dest: str,
    pip: Sequence[Any],
    args: Sequence[Any],
    files: Optional[Mapping[str, Any]] = None,
    markers: Optional[Mapping[str, Any]] = None,
    pack: bool = False,
    check_mode: bool = False,
    variable: str = "controller_pip",
) -> Dict[str, Any]:
    """``fetch`` in a process of its own, so that the controller downloads while the nodes do other work; returns
    (changed, cached, started, path) once that process holds the cache's lock, so a later ``fetch`` of the same
    ``dest`` waits for it and finds the folder complete, or, when it failed, downloads again and raises pip's error.
    The inputs are checked here first, as ``fetch`` checks them. When the caller ends first, the process goes on: it
    leaves a complete download, or a ``.partial`` folder that the next download empties."""
    dest = os.path.abspath(dest)
    if os.path.isdir(dest):
        return {"changed": False, "cached": True, "started": False, "path": dest}
    _checked(dest, pip, args, files, markers, variable)
    if check_mode:
        return {"changed": True, "cached": False, "started": False, "path": dest}
    # Two forks: the first child starts a session of its own and exits at once (reaped here), so the second, which
    # downloads, is nobody's child and holds none of the caller's files (a pipe that a test reads to its end, say),
    # only the pipe that tells this process it holds the lock (or, closed unwritten, that it ended before).
    ready, tell = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the forked processes leave through os._exit
        status = 1
        try:
            os.setsid()
            if os.fork() == 0:
                null = os.open(os.devnull, os.O_RDWR)
                for stream in (0, 1, 2):
                    os.dup2(null, stream)
                os.dup2(tell, 3)
                os.closerange(4, os.sysconf("SC_OPEN_MAX"))
                fetch(dest, pip, args, files, markers, pack, variable=variable, locked=lambda: os.close(3))
            status = 0
        finally:
            os._exit(status)
    os.close(tell)
    os.waitpid(child, 0)
    os.read(ready, 1)  # returns when the download's process holds the lock or has ended
    os.close(ready)
    return {"changed": True, "cached": False, "started": True, "path": dest}
