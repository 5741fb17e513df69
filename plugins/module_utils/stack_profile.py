# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure functions behind the torch_stack and hf_examples roles.

A *stack profile* is plain data (roles/torch_stack/vars/profiles.yml): a Python range, index URLs and a
mapping ``package name -> version or specifier``. These functions turn a profile plus the user's overrides into
the exact requirement list, find the reasons a profile cannot work on a node, derive the wheelhouse key and
platform tags for ``pip download``, the transformers command-line dialect, and the manifest that nodes compare.

No Ansible imports: the filter plugin wraps these, and the unit tests call them directly.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.amx.cluster.plugins.module_utils.dialect import DialectError, flag_dialect

IPEX = "intel-extension-for-pytorch"
ONECCL = "oneccl-bind-pt"
TORCH = "torch"
TRANSFORMERS = "transformers"

# Keys every profile must carry, with the type each value must have.
PROFILE_KEYS = {
    "description": str,
    "python_min": str,
    "python_max": str,
    "packages": dict,
    "extra_index_urls": list,
    "find_links": list,
}

_NAME_RE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$")
_RELEASE_RE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")
_OPERATORS = ("==", "!=", "<=", ">=", "~=", "<", ">", "===")


class StackProfileError(ValueError):
    """Bad profile data or bad user input; the message says what to change."""


def normalize_name(name: str) -> str:
    """PEP 503 normalised project name: ``Intel_Extension.For-PyTorch`` -> ``intel-extension-for-pytorch``."""
    if not isinstance(name, str) or not name.strip():
        raise StackProfileError(f"package name must be a non-empty string, got {name!r}")
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


def release(version: str) -> Tuple[int, ...]:
    """Numeric release part of a version: ``2.7.0+cpu`` -> (2, 7, 0); ``1.13`` -> (1, 13)."""
    match = _RELEASE_RE.match(str(version))
    if not match:
        raise StackProfileError(f"cannot read a version number from {version!r}")
    return tuple(int(part) for part in match.group(1).split("."))


def _padded(version: str, length: int = 3) -> Tuple[int, ...]:
    parts = release(version)
    return parts + (0,) * max(0, length - len(parts))


def major_minor(version: str) -> str:
    """``2.8.0`` -> ``2.8``; ``3.11.2`` -> ``3.11``."""
    parts = _padded(version, 2)
    return f"{parts[0]}.{parts[1]}"


def version_key(version: str) -> Tuple[int, ...]:
    """Comparable key of a version's release part, padded to 3 parts (``1.13`` == ``1.13.0``)."""
    return _padded(version, 3)


def make_spec(name: str, value: Any) -> str:
    """Requirement line from a name and a version (``2.8.0``) or a specifier (``>=2.8,<2.9``)."""
    if value is None or str(value).strip() == "":
        return name
    text = str(value).strip()
    if text.startswith(_OPERATORS) or text.startswith("@"):
        return f"{name}{text}" if not text.startswith("@") else f"{name} {text}"
    return f"{name}=={text}"


def split_spec(spec: str) -> Tuple[str, str]:
    """``torch==2.8.0`` -> (``torch``, ``==2.8.0``); the name is normalised, extras are dropped."""
    match = _NAME_RE.match(str(spec))
    if not match:
        raise StackProfileError(f"cannot read a package name from requirement {spec!r}")
    return normalize_name(match.group(1)), match.group(3).strip()


def exact_pin(specifier: str) -> Optional[str]:
    """The version of an exact ``==X`` pin, or None when the specifier allows a range."""
    text = specifier.strip()
    if text.startswith("==") and not text.startswith("==="):
        version = text[2:].strip()
        if "," in version or "*" in version or not version:
            return None
        return version
    return None


def _check_profile(name: str, profile: Any) -> None:
    if not isinstance(profile, Mapping):
        raise StackProfileError(f"stack profile {name!r} must be a mapping, got {type(profile).__name__}")
    for key, kind in PROFILE_KEYS.items():
        if key not in profile:
            raise StackProfileError(f"stack profile {name!r} lacks the key {key!r}")
        if not isinstance(profile[key], kind):
            raise StackProfileError(f"stack profile {name!r}: {key!r} must be a {kind.__name__}")
    if "index_url" in profile and profile["index_url"] is not None and not isinstance(profile["index_url"], str):
        raise StackProfileError(f"stack profile {name!r}: 'index_url' must be a URL string or null")
    if TORCH not in {normalize_name(pkg) for pkg in profile["packages"]}:
        raise StackProfileError(f"stack profile {name!r} must pin torch")


def python_versions(python_min: str, python_max: str) -> List[str]:
    """The major.minor versions from ``python_min`` to ``python_max``, both included: ``3.8``, ``3.10`` ->
    ``['3.8', '3.9', '3.10']``."""
    low, high = release(major_minor(python_min)), release(major_minor(python_max))
    if low[0] != high[0] or low > high:
        raise StackProfileError(f"the Python range {python_min} to {python_max} is not one of a single major version")
    return [f"{low[0]}.{minor}" for minor in range(low[1], high[1] + 1)]


def parse_lock(text: str) -> Dict[str, str]:
    """A lock file (``name==version`` per line, ``#`` comments) -> {normalised name: version}. Any other line (a
    specifier, a URL, an option) is refused: a lock names one release of each package."""
    locked: Dict[str, str] = {}
    for number, raw in enumerate((text or "").splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, specifier = split_spec(line)
        version = exact_pin(specifier)
        if version is None or ";" in version:
            raise StackProfileError(f"line {number} of the lock is not of the form name==version")
        if name in locked:
            raise StackProfileError(f"line {number} of the lock names {name} a second time")
        locked[name] = version
    return locked


def _lock_constraints(lock_text: str, pins: Mapping[str, str], chosen: Iterable[str]) -> List[str]:
    """The lock as constraint lines: the profile's exact pins in the place of the lock's entries for the same
    packages (a lock cannot contradict its profile), the packages the user chose (overrides, extra packages) left
    out."""
    locked = parse_lock(lock_text)
    locked.update({pkg: pin for pkg, pin in pins.items() if pkg in locked})
    for pkg in chosen:
        locked.pop(pkg, None)
    return [f"{pkg}=={version}" for pkg, version in sorted(locked.items())]


def resolve_profile(
    profiles: Mapping[str, Any],
    name: str,
    overrides: Optional[Mapping[str, Any]] = None,
    extra_packages: Optional[Sequence[str]] = None,
    index_url: Any = None,
    extra_index_urls: Optional[Sequence[str]] = None,
    find_links: Optional[Sequence[str]] = None,
    lock_text: Optional[str] = None,
    use_lock: bool = False,
) -> Dict[str, Any]:
    """Apply the user's overrides to profile ``name`` and return the effective profile.

    ``overrides`` maps a package to a version, a specifier, or None to drop the package. ``extra_packages``
    are requirement lines appended as given. ``index_url`` / ``extra_index_urls`` / ``find_links`` replace
    the profile's when not None (``index_url: ""`` means pip's own default index). With ``use_lock``, a profile
    that has a ``lock`` is constrained by ``lock_text`` (its lock file for the node's Python; None when there is
    none, which profile_problems reports): ``constraints`` holds its lines.
    """
    if not isinstance(profiles, Mapping) or not profiles:
        raise StackProfileError("no stack profiles are defined")
    if name not in profiles:
        known = ", ".join(sorted(profiles))
        raise StackProfileError(f"unknown stack profile {name!r}; known profiles: {known}")
    profile = profiles[name]
    _check_profile(name, profile)

    packages: Dict[str, Any] = {}
    for pkg, value in profile["packages"].items():
        packages[normalize_name(pkg)] = value
    for pkg, value in (overrides or {}).items():
        key = normalize_name(pkg)
        if value is None:
            packages.pop(key, None)
        else:
            packages[key] = value
    if TORCH not in packages:
        raise StackProfileError("torch cannot be dropped from a stack profile through torch_stack_overrides")

    requirements = [make_spec(pkg, value) for pkg, value in packages.items()]
    extra_names = set()
    for line in extra_packages or []:
        extra_name = split_spec(line)[0]
        if extra_name in packages:
            raise StackProfileError(
                f"{extra_name} is already in profile {name!r}: change its pin with torch_stack_overrides, "
                "not torch_stack_extra_packages"
            )
        extra_names.add(extra_name)
        requirements.append(str(line).strip())

    pins = {}
    for line in requirements:
        pkg, specifier = split_spec(line)
        pin = exact_pin(specifier)
        if pin is not None:
            pins[pkg] = pin

    locked = bool(use_lock) and bool(profile.get("lock"))
    user_chosen = {normalize_name(pkg) for pkg in overrides or {}} | extra_names
    constraints = _lock_constraints(lock_text, pins, user_chosen) if locked and lock_text is not None else []

    effective_index = profile.get("index_url") if index_url is None else index_url
    has_ipex = IPEX in packages
    has_ccl = ONECCL in packages
    transformers_pin = pins.get(TRANSFORMERS)
    dialect = transformers_dialect(transformers_pin, has_ipex, has_ccl) if transformers_pin else None
    return {
        "name": name,
        "description": profile["description"],
        "python_min": str(profile["python_min"]),
        "python_max": str(profile["python_max"]),
        "requirements": requirements,
        "locked": locked,
        "constraints": constraints,
        "packages": sorted(set(packages) | extra_names),
        "pins": pins,
        "index_url": effective_index or None,
        "extra_index_urls": list(profile["extra_index_urls"] if extra_index_urls is None else extra_index_urls),
        "find_links": list(profile["find_links"] if find_links is None else find_links),
        "has_ipex": has_ipex,
        "has_ccl": has_ccl,
        "backend": dialect["backend"] if dialect else ("ccl" if has_ccl else "gloo"),
        "transformers_dialect": dialect,
    }


def python_in_range(python_version: str, python_min: str, python_max: str) -> bool:
    """True when major.minor of ``python_version`` lies in [python_min, python_max] (inclusive)."""
    current = release(major_minor(python_version))
    return release(major_minor(python_min)) <= current <= release(major_minor(python_max))


def _yanked_hit(pin: str, rule: Any) -> bool:
    if isinstance(rule, (list, tuple)):
        return any(version_key(pin) == version_key(item) for item in rule)
    if isinstance(rule, Mapping) and "below" in rule:
        return version_key(pin) < version_key(str(rule["below"]))
    raise StackProfileError(f"a yanked rule must be a list of versions or {{below: VERSION}}, got {rule!r}")


def profile_problems(
    resolved: Mapping[str, Any],
    python_version: str,
    allow_yanked: bool = False,
    yanked: Optional[Mapping[str, Any]] = None,
) -> List[str]:
    """Every reason ``resolved`` (from resolve_profile) cannot be installed on a node with this Python.

    ``yanked`` maps a package to the releases withdrawn from the index: a list of versions or
    ``{below: VERSION}``. An empty list means the profile may go ahead. Each message says what to change.
    """
    problems: List[str] = []
    name = resolved["name"]
    if not python_in_range(python_version, resolved["python_min"], resolved["python_max"]):
        problems.append(
            f"profile {name!r} needs Python {resolved['python_min']} to {resolved['python_max']} but the node has "
            f"{python_version}: set torch_stack_base_python to a Python in that range, or choose another "
            "profile with torch_stack_profile"
        )
    if resolved.get("locked") and not resolved.get("constraints"):
        problems.append(
            f"profile {name!r} has no lock for Python {major_minor(python_version)} (roles/torch_stack/files/locks/"
            f"{name}/py{major_minor(python_version)}.txt): make one with tools/lock_profile.py, or set "
            "torch_stack_lock: false to let the unpinned packages float"
        )
    pins = resolved["pins"]
    torch_pin = pins.get(TORCH)
    for pkg, label in ((IPEX, "IPEX"), (ONECCL, "oneccl_bind_pt")):
        pin = pins.get(pkg)
        if pin is None or torch_pin is None:
            continue
        if pkg == IPEX and major_minor(pin) != major_minor(torch_pin):
            problems.append(
                f"{label} {pin} needs torch {major_minor(pin)}.x but torch is pinned to {torch_pin}: IPEX refuses "
                "to start unless the major.minor versions match; make torch_stack_overrides agree"
            )
        if pkg == ONECCL and version_key(pin) != version_key(torch_pin):
            problems.append(
                f"{label} {pin} must match torch exactly but torch is pinned to {torch_pin}: make "
                "torch_stack_overrides agree"
            )
    for pkg, rule in (yanked or {}).items():
        pin = pins.get(normalize_name(pkg))
        if pin is None or not _yanked_hit(pin, rule):
            continue
        if not allow_yanked:
            problems.append(
                f"{pkg}=={pin} is yanked from the package index (withdrawn, with known security issues): set "
                "torch_stack_allow_yanked: true to install it anyway, or choose a profile without it"
            )
    for pkg in (IPEX, ONECCL):
        if pkg in resolved["packages"] and pkg not in pins:
            problems.append(
                f"{pkg} must be pinned exactly (==VERSION) so that it can be checked against torch before "
                "anything is installed: fix torch_stack_overrides"
            )
    return problems


def platform_tags(arch: str, glibc_version: Optional[str]) -> List[str]:
    """pip ``--platform`` tags a node with this architecture and glibc accepts, most specific first."""
    if not arch:
        raise StackProfileError("the node's architecture is unknown")
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(arch.lower(), arch.lower())
    if not glibc_version:
        raise StackProfileError(
            "the node has no glibc (or its version is unknown): manylinux wheels do not fit it; use "
            "torch_stack_install_mode: direct"
        )
    major, minor = _padded(glibc_version, 2)[:2]
    if major != 2 or minor < 17:
        raise StackProfileError(f"glibc {glibc_version} is older than 2.17: no manylinux wheel of torch fits it")
    tags = [f"manylinux_2_{m}_{machine}" for m in range(minor, 16, -1)]
    tags.append(f"manylinux2014_{machine}")
    if machine in ("x86_64", "i686"):
        tags += [f"manylinux2010_{machine}", f"manylinux1_{machine}"]
    tags.append(f"linux_{machine}")
    return tags


def _digest(payload: Any, length: int = 64) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def requirements_hash(resolved: Mapping[str, Any]) -> str:
    """What decides the content of a venv: requirement lines, their constraints and where they come from."""
    return _digest(
        {
            "requirements": list(resolved["requirements"]),
            "constraints": list(resolved.get("constraints") or []),
            "index_url": resolved.get("index_url"),
            "extra_index_urls": list(resolved.get("extra_index_urls") or []),
            "find_links": list(resolved.get("find_links") or []),
        }
    )


# PEP 508 marker values that change with every kernel update: left out of a download's key, so that nodes which
# differ only in them share one download (made with the first node's values).
KERNEL_MARKER_KEYS = ("platform_release", "platform_version")


def wheelhouse_key(
    resolved: Mapping[str, Any],
    python_version: str,
    platforms: Sequence[str],
    markers: Optional[Mapping[str, Any]] = None,
) -> str:
    """Cache key of a controller wheelhouse: the requirements, their sources, the Python and platform tags, and the
    node's PEP 508 marker values when given (all but the kernel's)."""
    payload: Dict[str, Any] = {
        "requirements": requirements_hash(resolved),
        "python": major_minor(python_version),
        "platforms": list(platforms),
    }
    if markers is not None:
        if not isinstance(markers, Mapping):
            raise StackProfileError(f"the node's marker values must be a mapping, got {type(markers).__name__}")
        payload["markers"] = {str(k): v for k, v in markers.items() if k not in KERNEL_MARKER_KEYS}
    return _digest(payload, length=16)


# The file, in a wheelhouse download's folder, that holds the profile's lock (empty when the profile floats).
CONSTRAINTS_FILE = "constraints.txt"


def pip_download_args(
    resolved: Mapping[str, Any], python_version: str, platforms: Sequence[str], dest: str
) -> List[str]:
    """Arguments after ``pip download`` that fetch the wheels of ``resolved`` for a node, constrained by the
    profile's lock (``dest``/constraints.txt), and a pip wheel: the node's virtualenv upgrades its own pip from the
    wheelhouse first, since an old pip (Ubuntu 20.04's 20.0.2) refuses manylinux_2_28 wheels."""
    args = ["--dest", dest, "--only-binary=:all:", "--implementation", "cp"]
    args += ["--python-version", major_minor(python_version)]
    for tag in platforms:
        args += ["--platform", tag]
    args += index_args(resolved)
    if resolved.get("constraints"):
        args += ["-c", f"{dest}/{CONSTRAINTS_FILE}"]
    return [*args, *resolved["requirements"], "pip"]


def index_args(resolved: Mapping[str, Any]) -> List[str]:
    """pip options naming the profile's indexes and find-links pages."""
    args: List[str] = []
    if resolved.get("index_url"):
        args += ["--index-url", resolved["index_url"]]
    for url in resolved.get("extra_index_urls") or []:
        args += ["--extra-index-url", url]
    for url in resolved.get("find_links") or []:
        args += ["--find-links", url]
    return args


def transformers_dialect(version: str, has_ipex: bool = False, has_ccl: bool = False) -> Dict[str, Any]:
    """The transformers command-line dialect a stack implies, for a multi-rank run.

    The version rules live in module_utils/dialect.py (flag_dialect, shared with the train role); this keeps
    the part that describes a stack: CPU flag, backend flag, the backend a multi-rank run picks, --use_ipex.
    """
    try:
        flags = flag_dialect(
            version, world_size=2, backend="auto", oneccl_installed=bool(has_ccl), ipex_installed=bool(has_ipex)
        )
    except DialectError as exc:
        raise StackProfileError(str(exc)) from exc
    return {
        "version": flags["transformers_version"],
        "cpu_flag": flags["cpu_flag"],
        "backend_flag": flags["backend_flag"],
        "backend": flags["backend"],
        "supports_use_ipex": flags["supports_use_ipex"],
    }


def parse_freeze(freeze_text: str) -> Dict[str, str]:
    """``pip freeze`` output -> {normalised name: version}. A package installed from a file or a URL
    (``name @ file:///tmp/x.whl``) has no version in that output: its URL stands for the version, so a package
    installed by hand still counts. Comments and options (``-e`` ...) are ignored."""
    packages: Dict[str, str] = {}
    for raw in (freeze_text or "").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "-")):
            continue
        for separator in ("==", " @ "):
            if separator in line:
                name, version = line.split(separator, 1)
                packages[normalize_name(name)] = version.strip()
                break
    return packages


def build_manifest(
    profile_name: str,
    requirements_sha256: str,
    freeze_text: str,
    versions: Mapping[str, Any],
    python_version: str,
) -> Dict[str, Any]:
    """The manifest every node writes into its venv; ``manifest_sha256`` is equal on identical nodes."""
    packages = parse_freeze(freeze_text)
    if not packages:
        raise StackProfileError("pip freeze listed no package: the virtualenv is empty or broken")
    freeze_lines = [f"{name}=={version}" for name, version in sorted(packages.items())]
    body = {
        "schema": 1,
        "profile": profile_name,
        "python": major_minor(python_version),
        "requirements_sha256": requirements_sha256,
        "freeze_sha256": hashlib.sha256("\n".join(freeze_lines).encode("utf-8")).hexdigest(),
        "versions": {key: versions[key] for key in sorted(versions)},
        "packages": dict(sorted(packages.items())),
    }
    body["manifest_sha256"] = _digest(body)
    return body


def stack_differences(packages_by_host: Mapping[str, Mapping[str, str]]) -> List[str]:
    """What differs between the nodes' installed packages (host -> {package: version}), one line per package:
    ``transformers: 5.24.0 on a, b; 5.23.0 on c``, with ``absent`` for a node that lacks it. Empty when they agree."""
    names = sorted({name for packages in packages_by_host.values() for name in packages})
    lines = []
    for name in names:
        hosts_by_version: Dict[str, List[str]] = {}
        for host, packages in packages_by_host.items():
            hosts_by_version.setdefault(packages.get(name, "absent"), []).append(host)
        if len(hosts_by_version) > 1:
            found = "; ".join(f"{version} on {', '.join(hosts)}" for version, hosts in hosts_by_version.items())
            lines.append(f"{name}: {found}")
    return lines


def packages_lost(recorded: Mapping[str, str], freeze_text: str) -> List[str]:
    """The packages of an earlier install (the manifest's ``packages``) that ``freeze_text`` no longer lists at the
    recorded version, one line each (``torch: 2.13.0+cpu, now absent``). Packages added since are not counted."""
    if not isinstance(recorded, Mapping):
        raise StackProfileError(f"the recorded packages must be a mapping, got {type(recorded).__name__}")
    installed = parse_freeze(freeze_text)
    return [
        f"{name}: {version}, now {installed.get(name, 'absent')}"
        for name, version in sorted(recorded.items())
        if installed.get(name) != version
    ]


def parse_wheel_filename(filename: str) -> Tuple[str, str]:
    """``torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl`` -> (``torch``, ``2.13.0+cpu``)."""
    base = filename.rsplit("/", 1)[-1]
    if not base.endswith(".whl"):
        raise StackProfileError(f"{filename!r} is not a wheel file name")
    parts = base[:-4].split("-")
    if len(parts) not in (5, 6):
        raise StackProfileError(f"{filename!r} is not a valid wheel file name")
    return normalize_name(parts[0]), parts[1]


def wheels_missing(wheel_files: Iterable[str], freeze_text: str) -> List[str]:
    """The wheels in ``wheel_files`` whose project is absent from ``freeze_text`` or at another version."""
    installed = parse_freeze(freeze_text)
    missing = []
    for filename in wheel_files:
        name, version = parse_wheel_filename(filename)
        if installed.get(name, "").lower() != version.lower():
            missing.append(filename)
    return sorted(missing)


# ------------------------------------------------------------------------------------------------------------------
# The plan of the torch_stack role (its action amx.cluster.stack_plan): every check of the settings and the node at
# once, and the values the role's tasks use.
#
# ``settings`` holds the role's variables without their torch_stack_ prefix; ``node`` what the role's read-only
# probes found on the node (os_family, distribution, the base Python's node_info result or its error, the user's and
# the group's entries, the virtualenv folder's stat and whether the user can write to it).

INSTALL_MODES = ("wheelhouse", "direct")
UNREACHABLE_MODES = ("fail", "skip")

# Python module to import, and key in torch_stack_versions, for each package the role reports on. transformers
# alone, not its Trainer: importing the Trainer too took 23 to 25 s instead of 10 per node at 0.6 CPU, on the
# bring-up's critical path (docs/BENCHMARKS.md, 2026-12-07); the first job compiles it once.
STACK_IMPORTS = (
    {"package": TORCH, "module": "torch", "key": "torch"},
    {"package": TRANSFORMERS, "module": "transformers", "key": "transformers"},
    {"package": IPEX, "module": "intel_extension_for_pytorch", "key": "ipex"},
    {"package": ONECCL, "module": "oneccl_bindings_for_pytorch", "key": "oneccl"},
    {"package": "accelerate", "module": "accelerate", "key": "accelerate"},
    {"package": "datasets", "module": "datasets", "key": "datasets"},
    {"package": "tokenizers", "module": "tokenizers", "key": "tokenizers"},
)


def uses_lock(settings: Mapping[str, Any]) -> bool:
    """The collection's locks belong to its own profiles: a custom profile, even of the same name, has none."""
    return bool(settings.get("lock")) and settings.get("profile") not in (settings.get("custom_profiles") or {})


def _relative_paths(settings: Mapping[str, Any]) -> List[str]:
    names = ["venv"] + (["node_wheelhouse", "controller_cache"] if settings.get("install_mode") == "wheelhouse" else [])
    return [name for name in names if not str(settings.get(name) or "").startswith("/")]


def folder_checks(
    settings: Mapping[str, Any], node: Mapping[str, Any], controller_home: Optional[str], skip: Sequence[str] = ()
) -> List[str]:
    """The role's folders: never a system folder or the user's home (inputs.folder_problems, the collection's one
    list), and an existing virtualenv folder is used as it is, so it must be a folder (or a link to one) that the
    user can write to. ``skip``: the variables already reported (a relative path)."""
    from ansible_collections.amx.cluster.plugins.module_utils.inputs import (
        existing_folder_problem,
        folder_problems,
        role_folders_problem,
    )

    home = (node.get("user") or {}).get("home") or ""
    named = {f"torch_stack_{k}": settings.get(k) for k in ("venv", "node_wheelhouse") if k not in skip}
    found = folder_problems(named, home=home)
    if "controller_cache" not in skip:
        cache = {"torch_stack_controller_cache": settings.get("controller_cache")}
        found += folder_problems(cache, home=controller_home, absolute=False)
    problems = role_folders_problem(found, "/opt/amx-cluster/venv")
    stat = node.get("venv_stat") or {}
    if "venv" in skip or not stat.get("exists"):
        return problems
    venv = settings.get("venv")
    return problems + existing_folder_problem(
        "torch_stack_venv", venv, stat, node.get("venv_writable"), settings.get("user"), home
    )


def node_problems(settings: Mapping[str, Any], node: Mapping[str, Any]) -> List[str]:
    """What the read-only probes found wrong on the node: its OS, the user, the group, the base Python."""
    problems = []
    family = node.get("os_family")
    if family not in ("Debian", "RedHat"):
        problems.append(
            "torch_stack supports the Debian family (Debian, Ubuntu) and the RHEL family (RHEL, Rocky, Alma, Amazon "
            f"Linux), not {node.get('distribution')} ({family})"
        )
    user, venv = settings.get("user"), settings.get("venv")
    if not node.get("user"):
        problems.append(
            f"the user '{user}' that should own {venv} does not exist. Create it first, or set torch_stack_user to an "
            "existing user"
        )
    group = settings.get("group")
    if group is not None and not node.get("group_exists"):
        problems.append(
            f"the group '{group}' (torch_stack_group) that should own {venv} does not exist. Create it first, or set "
            "torch_stack_group to an existing group (null takes the user's primary group)"
        )
    if not isinstance(node.get("python"), Mapping):
        problems.append(
            f"cannot run torch_stack_base_python '{settings.get('base_python')}' "
            f"({str(node.get('python_error') or '').strip()}). Install Python or set torch_stack_base_python to an "
            "interpreter on the node"
        )
    return problems


def resolve_for_node(
    settings: Mapping[str, Any], profiles: Mapping[str, Any], python_version: str, lock_text: Optional[str]
) -> Dict[str, Any]:
    """resolve_profile with the role's settings; its error as a StackProfileError that says what to fix."""
    try:
        return resolve_profile(
            profiles,
            settings["profile"],
            settings.get("overrides"),
            settings.get("extra_packages"),
            settings.get("index_url"),
            settings.get("extra_index_urls"),
            settings.get("find_links"),
            lock_text,
            uses_lock(settings),
        )
    except StackProfileError as error:
        custom = (
            "torch_stack_custom_profiles (every profile needs description, python_min, python_max, index_url, "
            "extra_index_urls, find_links and packages with a torch pin; see vars/profiles.yml), "
            if settings["profile"] in (settings.get("custom_profiles") or {})
            else ""
        )
        raise StackProfileError(
            f"profile '{settings['profile']}' cannot be resolved: {error}. Fix {custom}torch_stack_overrides or "
            "torch_stack_extra_packages"
        ) from error


def index_urls(resolved: Mapping[str, Any]) -> List[str]:
    """Every index and find-links location of the profile, the ones the index check asks."""
    urls = [resolved.get("index_url"), *resolved["extra_index_urls"], *resolved["find_links"]]
    return [url for url in urls if url]


def unreachable(urls: Sequence[str], answers: Sequence[Mapping[str, Any]]) -> List[str]:
    """The ``urls`` that did not answer, from the registered results of the index check's tasks (uri: no status, or
    not 2xx/3xx; stat: no such path). A URL no result names was not asked and counts as answering."""
    bad = set()
    for answer in answers:
        if not isinstance(answer, Mapping) or answer.get("skipped") or "item" not in answer:
            continue
        if isinstance(answer.get("stat"), Mapping):
            good = bool(answer["stat"].get("exists"))
        else:
            status = answer.get("status")
            good = isinstance(status, int) and 200 <= status < 400
        if not good:
            bad.add(answer["item"])
    return [url for url in urls if url in bad]


def wheelhouse_spec(
    resolved: Mapping[str, Any],
    python: Mapping[str, Any],
    markers: Mapping[str, Any],
    platforms: Sequence[str],
    cache: str,
    extra_args: Sequence[str] = (),
) -> Dict[str, Any]:
    """One node's controller download: its key, folder (``dest``, under ``cache``), pip arguments (into
    ``dest``.partial), the files written beside the wheels, and the node's marker values for pip."""
    key = wheelhouse_key(resolved, python["version"], platforms, markers)
    dest = f"{cache}/{key}"
    args = pip_download_args(resolved, python["version"], platforms, dest + ".partial")
    return {
        "key": key,
        "name": resolved["name"],
        "python": major_minor(python["version"]),
        "platforms": list(platforms),
        "markers": dict(markers),
        "dest": dest,
        "args": ["download", "--disable-pip-version-check", *args, *[str(a) for a in extra_args]],
        "files": {"requirements.txt": requirements_text(resolved), CONSTRAINTS_FILE: constraints_text(resolved, "")},
    }


def requirements_text(resolved: Mapping[str, Any]) -> str:
    return "".join(f"{line}\n" for line in resolved["requirements"])


def constraints_text(resolved: Mapping[str, Any], floating: Optional[str] = None) -> str:
    """The lock's lines; for a profile that floats, ``floating`` (the virtualenv's file holds a comment there)."""
    if resolved.get("constraints"):
        return "".join(f"{line}\n" for line in resolved["constraints"])
    if floating is not None:
        return floating
    return f"# profile {resolved['name']} has no lock here: its unpinned packages float\n"


def plan(
    settings: Mapping[str, Any],
    profiles: Mapping[str, Any],
    yanked: Optional[Mapping[str, Any]],
    node: Mapping[str, Any],
    lock_text: Optional[str] = None,
    answers: Optional[Sequence[Mapping[str, Any]]] = None,
    controller_home: Optional[str] = None,
) -> Dict[str, Any]:
    """Every problem of the settings and the node (``problems``, empty when the role may go on) and, when there is
    none, what the role's tasks use. ``answers`` are the results of the index check: the indexes that did not answer
    are refused (torch_stack_unreachable_indexes: fail) or left out (skip, named in ``left_out``)."""
    problems: List[str] = []
    all_profiles = {**profiles, **(settings.get("custom_profiles") or {})}
    name = settings.get("profile")
    if name not in all_profiles:
        problems.append(
            f"unknown torch_stack_profile '{name}'. Choose one of {', '.join(sorted(all_profiles))}, or define it in "
            "torch_stack_custom_profiles"
        )
    relative = _relative_paths(settings)
    if relative:
        listed = ", ".join(f"torch_stack_{k} is '{settings.get(k)}'" for k in relative)
        problems.append(
            f"{listed}: a relative path (or one with ~) would land wherever the task happens to run. Set "
            f"{' and '.join('torch_stack_' + k for k in relative)} to a full path, such as /opt/amx-cluster/venv"
        )
    timeout = settings.get("index_check_timeout")
    if not isinstance(timeout, int) or timeout < 1:
        problems.append(
            f"torch_stack_index_check_timeout is {timeout}: give the seconds to wait for each index (1 or more), or "
            "set torch_stack_index_check: false to skip the check"
        )
    if settings.get("install_mode") not in INSTALL_MODES:
        problems.append("torch_stack_install_mode must be wheelhouse or direct")
    if settings.get("unreachable_indexes") not in UNREACHABLE_MODES:
        problems.append("torch_stack_unreachable_indexes must be fail or skip")
    wheelhouse = settings.get("install_mode") == "wheelhouse"
    if wheelhouse:
        from ansible_collections.amx.cluster.plugins.module_utils.examples import controller_pip_problem

        problems += [
            p for p in [controller_pip_problem(settings.get("controller_pip"), "torch_stack_controller_pip")] if p
        ]
    problems += node_problems(settings, node)
    problems += folder_checks(settings, node, controller_home, skip=relative)
    python = node.get("python") if isinstance(node.get("python"), Mapping) else None
    resolved = None
    if python and name in all_profiles:
        try:
            resolved = resolve_for_node(settings, all_profiles, python["version"], lock_text)
        except StackProfileError as error:
            problems.insert(0, str(error))
        else:
            found = profile_problems(resolved, python["version"], bool(settings.get("allow_yanked")), yanked)
            if found:
                problems.insert(0, f"profile '{name}' cannot be installed: {' | '.join(found)}")
    glibc = bool(python) and python.get("libc") == "glibc" and bool(python.get("libc_version"))
    if python and wheelhouse and not glibc:
        problems.append(
            f"the base Python reports libc '{python.get('libc')} {python.get('libc_version')}', not glibc: the "
            "controller cannot pick manylinux wheels for it. Set torch_stack_install_mode: direct"
        )
    if problems or resolved is None:
        return {"problems": problems}

    urls = index_urls(resolved)
    missing = unreachable(urls, answers or [])
    blocking = (
        missing if settings.get("unreachable_indexes") == "fail" else [u for u in missing if u == resolved["index_url"]]
    )
    if blocking:
        where = "the controller" if wheelhouse else "the node"
        return {
            "problems": [
                f"{where} cannot reach the package index(es) of profile '{name}' (no answer, an HTTP error, or no such "
                f"path): {' | '.join(blocking)}. Fix the URL, or point torch_stack_index_url / "
                "torch_stack_extra_index_urls / torch_stack_find_links at an index that answers (a local wheel folder "
                "works), or set torch_stack_unreachable_indexes: skip to go on without an extra index that does not "
                "answer"
            ]
        }
    if missing:
        resolved = dict(
            resolved,
            extra_index_urls=[u for u in resolved["extra_index_urls"] if u not in missing],
            find_links=[u for u in resolved["find_links"] if u not in missing],
        )
    platforms = platform_tags(python["machine"], python["libc_version"]) if glibc else []
    markers = node.get("markers") or {}
    result: Dict[str, Any] = {
        "problems": [],
        "resolved": resolved,
        "requirements_sha256": requirements_hash(resolved),
        "python": major_minor(python["version"]),
        "index_urls": urls,
        "left_out": missing,
        "index_args": index_args(resolved),
        "requirements": requirements_text(resolved),
        "constraints": constraints_text(resolved),
        "imports": [dict(entry) for entry in STACK_IMPORTS],
        "group": settings.get("group") if settings.get("group") is not None else node.get("primary_group"),
        "venv_absent": not (node.get("venv_stat") or {}).get("exists"),
        # Where the node's pinned wheels must be listed (amx.cluster.stack_sources).
        "source_check": {
            "name": node.get("name") or "",
            "pins": resolved["pins"],
            "indexes": ([resolved["index_url"]] if resolved["index_url"] else []) + resolved["extra_index_urls"],
            "find_links": resolved["find_links"],
            "default_index": resolved["index_url"] is None,
            "left_out": missing,
            "python": python["version"],
            "platforms": platforms,
        },
    }
    if wheelhouse:
        result["wheelhouse"] = wheelhouse_spec(
            resolved,
            python,
            markers,
            platforms,
            settings["controller_cache"],
            settings.get("controller_pip_extra_args") or (),
        )
    return result


def _earlier(manifest_text: Optional[str]) -> Dict[str, Any]:
    """The manifest of an earlier install; a file that is not a JSON object counts as none (installed again)."""
    try:
        earlier = json.loads(manifest_text) if manifest_text else {}
    except ValueError:
        return {}
    return earlier if isinstance(earlier, dict) else {}


def install_state(
    profile: str,
    resolved: Mapping[str, Any],
    manifest_text: Optional[str],
    freeze: Optional[str],
    import_every_run: bool,
) -> Dict[str, Any]:
    """Whether the stack must be installed: no manifest (a first or an interrupted install), other requirements or
    profile, or a package of the earlier install removed or changed by hand since. And whether it must be imported
    again: after an install, or when the manifest rebuilt from today's pip freeze with the earlier import's versions
    differs from the earlier manifest."""
    earlier = _earlier(manifest_text)
    lost = packages_lost(earlier.get("packages") or {}, freeze or "") if earlier else []
    sha = requirements_hash(resolved)
    needed = not earlier or earlier.get("requirements_sha256") != sha or earlier.get("profile") != profile or bool(lost)
    versions = earlier.get("versions") if isinstance(earlier.get("versions"), Mapping) else {}
    import_needed = bool(import_every_run) or needed or "python" not in versions
    if not import_needed:
        try:
            again = build_manifest(profile, sha, freeze or "", versions, versions["python"])
        except StackProfileError:
            import_needed = True
        else:
            import_needed = again["manifest_sha256"] != earlier.get("manifest_sha256")
    return {"install_needed": needed, "packages_lost": lost, "import_needed": import_needed, "earlier": earlier}


def pin_mismatches(resolved: Mapping[str, Any], versions: Mapping[str, Any]) -> List[str]:
    """The imported versions that differ from an exact pin; a pin without a local label (``2.8.0``) takes any local
    build of it (``2.8.0+cpu``)."""
    out = []
    for entry in STACK_IMPORTS:
        pin = resolved["pins"].get(entry["package"])
        if pin is None:
            continue
        got = str(versions.get(entry["key"]))
        if (got if "+" in pin else got.split("+", maxsplit=1)[0]) != pin:
            out.append(f"{entry['package']} {got} (pinned {pin})")
    return out


def installed_stack(
    profile: str,
    resolved: Mapping[str, Any],
    freeze: str,
    report: Optional[Mapping[str, Any]],
    earlier: Mapping[str, Any],
    venv: str,
) -> Dict[str, Any]:
    """The manifest of the installed stack, the facts the role publishes, and every problem the verify step
    reports. ``report`` is the import (amx.cluster.node_info with the virtualenv's Python), None when the earlier
    import still describes the virtualenv (install_state); its versions are then the earlier manifest's."""
    if report:
        python = report["python"]["version"]
        versions = {**report["versions"], "python": python}
        errors = dict(report.get("import_errors") or {})
    else:
        versions = dict(earlier["versions"])
        python, errors = versions["python"], {}
    manifest = build_manifest(profile, requirements_hash(resolved), freeze, versions, python)
    versions = manifest["versions"]
    has_ipex, has_ccl = versions.get("ipex") is not None, versions.get("oneccl") is not None
    dialect = (
        transformers_dialect(versions["transformers"], has_ipex, has_ccl) if versions.get("transformers") else None
    )
    problems = []
    if errors:
        listed = " ".join(f"{key} ({str(error)[:300]})" for key, error in errors.items())
        problems.append(
            f"{venv}/bin/python cannot import: {listed}. Look at {venv}/torch-stack-requirements.txt and the pins in "
            "torch_stack_overrides"
        )
    mismatches = pin_mismatches(resolved, versions)
    if mismatches:
        problems.append(
            f"installed versions differ from the pins: {', '.join(mismatches)}. Remove {venv} and run the role again"
        )
    if has_ipex and versions.get("torch") and major_minor(versions["ipex"]) != major_minor(versions["torch"]):
        problems.append(
            f"IPEX {versions['ipex']} and torch {versions['torch']} differ in major.minor: IPEX will refuse to start. "
            "Align them with torch_stack_overrides"
        )
    facts = {
        "versions": versions,
        "manifest_hash": manifest["manifest_sha256"],
        "packages": manifest["packages"],
        # The profile's indexes as the install used them (an extra index the check left out is not there).
        "indexes": {k: resolved[k] for k in ("index_url", "extra_index_urls", "find_links")},
        # The profile's lock for the node's Python (empty when the profile floats): hf_examples installs the
        # example's requirements with it as constraints.
        "constraints": list(resolved.get("constraints") or []),
        "backend": dialect["backend"] if dialect else resolved["backend"],
        "has_ipex": has_ipex,
        "has_oneccl": has_ccl,
        "transformers_dialect": dialect,
    }
    return {"manifest": manifest, "import_errors": errors, "verify_problems": problems, "facts": facts}
