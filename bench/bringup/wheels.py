# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The wheels the benchmark deals in: the profile's pins, the torch wheel on this machine's disk, and the bytes
the controller fetched for the wheelhouse (from pip's log)."""

from __future__ import annotations

import glob
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import urllib.parse
from typing import Any, Dict, List

import yaml

from .settings import PROFILE, PROFILES

PIP_ADDED = re.compile(r"Added .*? from ((?:https?|file):\S+?)(?:#\S*)?(?: \(from .*\))? to build tracker")
PIP_DOWNLOADING = re.compile(r"Downloading (\S+) \(([\d.]+) (kB|MB|GB|bytes)\)")
UNITS = {"bytes": 1, "kB": 1000, "MB": 1000**2, "GB": 1000**3}
SOURCE_KINDS = {"https": "index", "http": "index", "file": "local_disk"}  # a wheel's URL scheme: where it came from


def native_profile() -> Dict[str, Any]:
    return yaml.safe_load(PROFILES.read_text())["__torch_stack_profiles"][PROFILE]


def find_torch_wheel(version: str) -> pathlib.Path:
    """The torch wheel the controller's pip takes from local disk: in a find-links folder of its configuration."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
    ).stdout
    folders: List[str] = []
    for line in listed.splitlines():
        if "find-links" in line:
            folders += line.split("=", 1)[1].strip().strip("'\"").split()
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    for folder in folders:
        found = sorted(glob.glob(os.path.join(folder, f"torch-{version}*-{tag}-{tag}-*.whl")))
        if found:
            return pathlib.Path(found[0])
    raise SystemExit(
        f"no torch {version} wheel in pip's find-links folders ({', '.join(folders) or 'none configured'}): "
        "give one with --torch-wheel"
    )


def wheelhouse_bytes(cache: pathlib.Path, pip_log: pathlib.Path) -> Dict[str, Any]:
    """What the controller fetched for the wheelhouse: each wheel's size (from the tar) by where pip took it from."""
    tars = sorted(cache.glob("*/wheels.tar"))
    if len(tars) != 1 or not pip_log.exists():
        raise RuntimeError(f"expected one wheelhouse under {cache} and pip's log {pip_log}")
    with tarfile.open(tars[0]) as tar:
        sizes = {pathlib.PurePosixPath(m.name).name: m.size for m in tar.getmembers() if m.isfile()}
    return {**classify_wheels(sizes, pip_log.read_text()), "tar_bytes": tars[0].stat().st_size}


def classify_wheels(sizes: Dict[str, int], pip_log: str) -> Dict[str, Any]:
    """Wheel sizes by source, from pip's `Added <requirement> from <url> ... to build tracker` lines (http(s): a
    package index, the benchmark's own included; file: a folder on this machine)."""
    sources = {urllib.parse.unquote(url.rsplit("/", 1)[-1]): url for url in PIP_ADDED.findall(pip_log)}
    by_source = {"index": 0, "local_disk": 0, "unknown": 0}
    files = []
    for wheel, size in sorted(sizes.items()):
        url = sources.get(wheel, "")
        kind = SOURCE_KINDS.get(url.split(":", 1)[0], "unknown")
        by_source[kind] += size
        files.append({"wheel": wheel, "bytes": size, "source": kind})
    return {
        "wheels": len(sizes),
        "wheelhouse_bytes": sum(sizes.values()),
        "from_index_bytes": by_source["index"],
        "from_local_disk_bytes": by_source["local_disk"],
        "unknown_source_bytes": by_source["unknown"],
        "index_pages_fetched": len(re.findall(r"Fetched page https?://", pip_log)),
        "files": files,
    }


def downloaded_bytes(pip_log: str) -> int:
    """What pip downloaded, from its rounded `Downloading <file> (<size> <unit>)` lines (an approximation)."""
    return int(sum(float(number) * UNITS[unit] for _wheel, number, unit in PIP_DOWNLOADING.findall(pip_log)))


def profile_requirements(profile: Dict[str, Any], with_torch: bool = True) -> List[str]:
    """The profile's pins as pip requirements, torch among them unless `with_torch` is false."""
    return [f"{name}=={version}" for name, version in profile["packages"].items() if with_torch or name != "torch"]


def index_requirements(profile: Dict[str, Any]) -> List[str]:
    """What the benchmark's package index serves besides torch: the profile's pins and a pip wheel, since the role's
    download takes one too (the node's virtualenv upgrades its pip from the wheelhouse first)."""
    return [*profile_requirements(profile, with_torch=False), "pip"]


def index_folder(profile: Dict[str, Any], torch_wheel: pathlib.Path, cache: pathlib.Path) -> pathlib.Path:
    """A folder with every wheel the profile installs, dependencies and torch included, for the benchmark's own
    package index: `pip download` of the pins with this machine's pip configuration (so torch comes from the wheel
    on disk), for this Python, which is the nodes' too (Debian bookworm's 3.11). Made once per pin set and wheel, in
    `cache`; not timed (it stands for the index's contents, not for a download anyone waits for)."""
    pins = index_requirements(profile)
    key = hashlib.sha256("\n".join([torch_wheel.name, *pins]).encode()).hexdigest()[:16]
    folder = cache / key
    if (folder / ".complete").exists():
        return folder
    partial = cache / f"{key}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    argv = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary", ":all:", "--dest", str(partial)]
    proc = subprocess.run([*argv, str(torch_wheel), *pins], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"pip download of the index's wheels failed:\n{(proc.stdout + proc.stderr)[-3000:]}")
    (partial / ".complete").touch()
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return folder
