# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write the lock of a stack profile: roles/torch_stack/files/locks/PROFILE/pyX.Y.txt, one per Python of the
profile's range, every package (dependencies included) with one version, for CPython X.Y on Linux x86_64.

    .venv/bin/python tools/lock_profile.py recipe-2022              # every Python of the profile's range
    .venv/bin/python tools/lock_profile.py recipe-2022 --python 3.8
    .venv/bin/python tools/lock_profile.py recipe-2022 --check      # resolve again, compare, write nothing

How (the profile's ``lock`` in vars/profiles.yml): uv resolves the profile's packages, what run_qa.py's requirement
file adds (EXAMPLE_REQUIREMENTS) and pip, for the node's Python and platform, wheels only, with only the releases
uploaded before ``exclude_newer``. A package of ``standins`` (one whose index, PyTorch's or Intel's, cannot
be reached from where the lock is made) is not resolved: a metadata-only wheel with the profile's version and the
dependencies the real wheel declares takes its place, and the lock keeps the profile's pin. uv reads neither pip's
configuration nor its constraint files, so nothing of this machine's pip set-up enters a lock.
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from typing import Dict, List, Sequence

import yaml

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / ".collections"))  # made by `make setup`

from ansible_collections.amx.cluster.plugins.module_utils import stack_profile as sp  # noqa: E402

PROFILES = REPO / "roles" / "torch_stack" / "vars" / "profiles.yml"
LOCKS = REPO / "roles" / "torch_stack" / "files" / "locks"

# What run_qa.py's requirement file (examples/pytorch/question-answering) adds to a profile's packages, and pip, which
# the node's virtualenv upgrades first. The other examples' additions (sentencepiece, protobuf, scipy, scikit-learn)
# are left out: sentencepiece had no wheel for the newest Python of some profiles at their cut-off date.
EXAMPLE_REQUIREMENTS = ["accelerate", "pip"]


def lock_path(profile: str, python: str) -> pathlib.Path:
    return LOCKS / profile / f"py{python}.txt"


def standin_wheel(folder: pathlib.Path, name: str, version: str, requires: Sequence[str]) -> pathlib.Path:
    """A wheel that carries only metadata: enough for the resolver to read the dependencies."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    metadata = [f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}"]
    metadata += [f"Requires-Dist: {line}" for line in requires]
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{info}/METADATA", "\n".join(metadata) + "\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr(f"{info}/RECORD", "")
    return path


def resolver_input(profile: Dict, folder: pathlib.Path) -> List[str]:
    standins = {sp.normalize_name(name): deps for name, deps in profile["lock"].get("standins", {}).items()}
    lines = []
    for name, value in profile["packages"].items():
        pkg = sp.normalize_name(name)
        if pkg in standins:
            version = sp.exact_pin(sp.split_spec(sp.make_spec(pkg, value))[1])
            if version is None:
                raise SystemExit(f"{pkg} stands in for a package out of reach: the profile must pin it exactly")
            lines.append(f"{pkg} @ {standin_wheel(folder, pkg, version, standins[pkg]).as_uri()}")
        else:
            lines.append(sp.make_spec(pkg, value))
    return lines + EXAMPLE_REQUIREMENTS


def resolve(uv: str, profile_name: str, profile: Dict, python: str) -> str:
    lock = profile["lock"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        (folder / "requirements.in").write_text("\n".join(resolver_input(profile, folder)) + "\n")
        argv = [uv, "pip", "compile", str(folder / "requirements.in"), "--python-version", python]
        argv += ["--python-platform", lock["platform"], "--exclude-newer", lock["exclude_newer"]]
        argv += ["--no-build", "--no-config", "--no-python-downloads", "--no-header", "--no-annotate", "--quiet"]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"uv could not resolve {profile_name} for Python {python}:\n{done.stderr}")
    # The stand-ins' file URLs become the profile's pins (the same rule the role applies: the profile's pin wins).
    pins = sp.resolve_profile({profile_name: profile}, profile_name)["pins"]
    lines = []
    for line in done.stdout.splitlines():
        name = sp.split_spec(line)[0] if line.strip() else ""
        if name:
            lines.append(f"{name}=={pins[name]}" if " @ " in line else line.strip())
    sp.parse_lock("\n".join(lines))  # one release per package, nothing else
    standins = ", ".join(sorted(sp.normalize_name(name) for name in lock.get("standins", {})))
    header = [
        f"# Lock of stack profile {profile_name} for CPython {python} on {lock['platform']}: every package with its",
        f"# version, resolved from the releases uploaded before {lock['exclude_newer']}"
        + (f"; {standins}: the profile's pins." if standins else "."),
        f"# Made by tools/lock_profile.py {profile_name} --python {python}; do not edit by hand.",
    ]
    return "\n".join(header + sorted(lines)) + "\n"


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("profile", help="a profile of roles/torch_stack/vars/profiles.yml that has a lock")
    parser.add_argument("--python", action="append", help="a major.minor of the profile's range (repeatable)")
    beside = pathlib.Path(sys.executable).parent / "uv"  # installed into this virtualenv
    default_uv = str(beside) if beside.is_file() else shutil.which("uv")
    parser.add_argument("--check", action="store_true", help="compare with the lock files instead of writing them")
    parser.add_argument("--uv", default=default_uv, help="the uv program (default: beside this Python, or on PATH)")
    args = parser.parse_args(argv)
    profiles = yaml.safe_load(PROFILES.read_text())["__torch_stack_profiles"]
    profile = profiles.get(args.profile)
    if profile is None or not profile.get("lock"):
        with_lock = ", ".join(name for name, data in profiles.items() if data.get("lock"))
        raise SystemExit(f"{args.profile!r} is no profile with a lock; these have one: {with_lock}")
    if not args.uv:
        raise SystemExit(f"uv is neither beside {sys.executable} nor on PATH: run make setup, or pip install uv")
    in_range = sp.python_versions(profile["python_min"], profile["python_max"])
    stale = []
    for python in args.python or in_range:
        if python not in in_range:
            raise SystemExit(f"Python {python} is outside the range of {args.profile}: {', '.join(in_range)}")
        path, text = lock_path(args.profile, python), resolve(args.uv, args.profile, profile, python)
        shown = path.relative_to(REPO)
        if args.check:
            same = path.is_file() and path.read_text() == text
            print(f"{shown}: {'as resolved' if same else 'differs from a resolution made now'}")
            stale += [] if same else [shown]
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {shown}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
