# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node record's probe language and its one decision: what a node holds now, and whether a record still holds.

Every record of the collection (a node role's stamp, the provision stamp, each node of a launch plan, the smoke
test's record) is decided here. `probe(spec)` reads the node; `fingerprint(result)` is the part a record keeps;
`differences(recorded, live)` names what changed (by name, never by content); `decide(record, inputs, live, boot_id,
force)` says whether the record holds. The master also sends this file as it is to every worker over the mesh:

    ssh node1 python3 - SPEC_JSON < node_probe.py

and reads one JSON line back: {"ok": true, "result": {...}} or {"ok": false, "error": "..."}.

The spec (every key optional; an unknown key or a wrong type is a ProbeError naming it) and what it gives:

    files: [abs path]                   -> files: {path: {"sha256", "mode", "uid"} | {"link": target} (never
                                           followed) | None (absent)}
    trees: [abs folder]                 -> trees: {path: sha256 of the sorted "relpath\tsize\tmtime_ns" lines
                                           (a symlink: "relpath\t->target", not followed) | None}
    venv: abs path or ""                -> venv: {"path", "pyvenv_cfg": a file's state, "distributions":
                                           {name: version}} | None
    packages: {"manager": "dpkg"|"rpm"  -> packages: {name: version | None} (one query; the manager found on PATH
               (optional), "names": [...]}  when none is named)
    absent: [abs path]                  -> present: sorted [path that exists]
    processes: {"user": uid,            -> processes: sorted ["PID CMDLINE"] of that real uid's processes with an
                "prefix": text}            argument that starts with the prefix (the probe and its parents left out)
    disk: abs path                      -> disk_free: bytes | None
    always                              -> boot_id ("" when unreadable), kernel, python

Whatever cannot be read (a FIFO, a device or a folder where a file is expected, a path that gives an error, a tree
holding such an entry, no package manager) gives {"unreadable": why}: never opened nor waited on, and never equal
to itself, so a record over it never holds. Every result key is always there.

Standard library only, Python 3.8+ (it runs on the nodes' system Python), and no import from the collection: the
file is sent as it is.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

BOOT_ID = "/proc/sys/kernel/random/boot_id"
PROC = "/proc"
C_LOCALE = {"LC_ALL": "C", "LANG": "C", "LANGUAGE": "C"}
# The package query's program for each manager.
PACKAGE_BINARIES = {"dpkg": "dpkg-query", "rpm": "rpm"}
PACKAGE_QUERY_TIMEOUT = 120
# The keys a spec may hold, and the parts of a result that a recorded launch compares.
SPEC_KEYS = ("files", "trees", "venv", "packages", "absent", "processes", "disk")
FINGERPRINT_KEYS = ("boot_id", "kernel", "python", "files", "trees", "venv", "packages")
# The parts that map a path (or a package) to its state.
PATH_PARTS = ("files", "trees", "packages")
# What a part that cannot be read gives instead of its state: {"unreadable": why}.
UNREADABLE = "unreadable"
CMDLINE_LIMIT = 300
# How many distributions a sentence about a virtualenv names before it counts the rest.
SHOWN_NAMES = 5


class ProbeError(ValueError):
    """A spec or a record that cannot be used; the message names the key that is wrong, never a file's contents.

    module_utils.node_state knows it as StampError.
    """


# ---------------------------------------------------------------------------------------------------------------
# Packages and virtualenvs
# ---------------------------------------------------------------------------------------------------------------


def package_query_argv(manager: str, binary: str, names: List[str]) -> List[str]:
    """The one command that lists the versions of `names` (dpkg-query or rpm)."""
    if manager == "dpkg":
        return [binary, "-W", "-f=${Package}\t${db:Status-Abbrev}\t${Version}\n", "--", *names]
    if manager == "rpm":
        return [binary, "-q", "--qf", "%{NAME}\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}.%{ARCH}\n", "--", *names]
    raise ProbeError(f"unknown package manager '{manager}' (dpkg or rpm)")


def parse_package_versions(manager: str, names: List[str], stdout: str) -> Dict[str, Optional[str]]:
    """{name: version, or None when not installed} for every name asked, from the query's output.

    dpkg-query: a line per known package (`ii ` is installed; `rc `, `un ` are not), nothing for an unknown one.
    rpm: a line per installed package (several for several architectures, joined), "package X is not installed"
    otherwise.
    """
    found: Dict[str, List[str]] = {}
    for line in stdout.splitlines():
        parts = line.split("\t")
        if manager == "dpkg" and len(parts) == 3:
            name, status, version = parts
            if status.startswith("ii"):
                found.setdefault(name, []).append(version)
        elif manager == "rpm" and len(parts) == 2:
            found.setdefault(parts[0], []).append(parts[1])
    return {name: (",".join(sorted(found[name])) if name in found else None) for name in names}


def canonical_json(value: Any) -> str:
    """One text per value: sorted keys, no spaces, anything JSON does not know as its str()."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def canonical_distribution(name: str) -> str:
    """A distribution name as pip compares it (PEP 503: lower case, runs of -_. as one -)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def venv_distributions(folder_names: Iterable[str]) -> Dict[str, str]:
    """{distribution: version} from the `NAME-VERSION.dist-info` folder names of a site-packages folder.

    What pip installs leaves one such folder per distribution: an install, an upgrade or a removal changes the
    names. Folders of another form are left out.
    """
    found: Dict[str, str] = {}
    for folder in folder_names:
        if not folder.endswith(".dist-info"):
            continue
        stem = folder[: -len(".dist-info")]
        name, sep, version = stem.rpartition("-")
        if not sep or not name or not version:
            continue
        key = canonical_distribution(name)
        found[key] = version if key not in found else ",".join(sorted({found[key], version}))
    return found


def dist_info_names(venv: str) -> List[str]:
    """The names of the `*.dist-info` folders in a virtualenv's lib/python*/site-packages, sorted."""
    pattern = os.path.join(glob.escape(venv), "lib", "python*", "site-packages", "*.dist-info")
    return sorted(os.path.basename(found) for found in glob.glob(pattern))


# ---------------------------------------------------------------------------------------------------------------
# Reading the node
# ---------------------------------------------------------------------------------------------------------------


def file_state(path: str) -> Optional[Dict[str, Any]]:
    """{sha256, mode, uid} of a regular file, None when it is absent, {"link": target} for a symlink (never followed:
    a link to a root-only file gives no hash), {"unreadable": why} for anything else (a FIFO, a device or a folder is
    never opened; an error while reading)."""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return {UNREADABLE: type(exc).__name__}
    if stat.S_ISLNK(info.st_mode):
        try:
            return {"link": os.readlink(path)}
        except OSError as exc:
            return {UNREADABLE: type(exc).__name__}
    if not stat.S_ISREG(info.st_mode):
        return {UNREADABLE: "not a regular file"}
    try:
        # No following and no waiting: the path may have become a link or a FIFO since the lstat.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return {UNREADABLE: "not a regular file"}
            digest = hashlib.sha256()
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        return {UNREADABLE: type(exc).__name__}
    return {"sha256": digest.hexdigest(), "mode": f"{stat.S_IMODE(info.st_mode):04o}", "uid": info.st_uid}


def tree_lines(top: str) -> List[str]:
    """A line per entry beneath `top`: "relpath\tsize\tmtime_ns" for a regular file, "relpath\t->target\tsize\t
    mtime_ns" for a symlink (never opened nor hashed: its target's size and time from stat, "dir" for a folder,
    which is not followed), and "relpath\tunreadable" for anything that cannot be fingerprinted: a folder that
    cannot be listed, a FIFO, a socket or a device, a dangling link or one to such a thing."""
    lines: List[str] = []

    def unreadable(error: OSError) -> None:
        if error.filename is not None:
            lines.append(f"{os.path.relpath(error.filename, top)}\t{UNREADABLE}")

    for folder, dirnames, filenames in os.walk(top, onerror=unreadable, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(folder, name)
            relpath = os.path.relpath(path, top)
            try:
                info = os.lstat(path)
                if stat.S_ISLNK(info.st_mode):
                    target = os.stat(path)
                    if stat.S_ISDIR(target.st_mode):
                        lines.append(f"{relpath}\t->{os.readlink(path)}\tdir")
                    elif stat.S_ISREG(target.st_mode):
                        lines.append(f"{relpath}\t->{os.readlink(path)}\t{target.st_size}\t{target.st_mtime_ns}")
                    else:
                        lines.append(f"{relpath}\t{UNREADABLE}")
                elif stat.S_ISREG(info.st_mode):
                    lines.append(f"{relpath}\t{info.st_size}\t{info.st_mtime_ns}")
                elif not stat.S_ISDIR(info.st_mode):
                    lines.append(f"{relpath}\t{UNREADABLE}")
            except OSError:
                # Gone between the listing and the look, or a link that leads nowhere: no fingerprint.
                lines.append(f"{relpath}\t{UNREADABLE}")
    return sorted(lines)


def tree_sha256(top: str) -> Any:
    """The sha256 over tree_lines(top), None when `top` is absent, {"unreadable": why} when it is not a folder or
    holds an entry that cannot be fingerprinted."""
    if not os.path.lexists(top):
        return None
    if not os.path.isdir(top):
        return {UNREADABLE: "not a folder"}
    lines = tree_lines(top)
    if any(line.endswith("\t" + UNREADABLE) for line in lines):
        return {UNREADABLE: "it holds an entry that cannot be fingerprinted"}
    digest = hashlib.sha256()
    for line in lines:
        # Names that are not UTF-8 come from os.walk as surrogate escapes: hash their bytes as they are.
        digest.update(line.encode("utf-8", "surrogateescape") + b"\n")
    return digest.hexdigest()


def venv_state(venv: str) -> Optional[Dict[str, Any]]:
    """{"path", "pyvenv_cfg": its file_state, "distributions"} of a virtualenv; None when there is none."""
    if not venv:
        return None
    try:
        info = os.stat(venv)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return {UNREADABLE: type(exc).__name__}
    if not stat.S_ISDIR(info.st_mode):
        return {UNREADABLE: "not a folder"}
    return {
        "path": venv,
        "pyvenv_cfg": file_state(os.path.join(venv, "pyvenv.cfg")),
        "distributions": venv_distributions(dist_info_names(venv)),
    }


def package_versions(manager: Optional[str], names: List[str]) -> Dict[str, Any]:
    """{name: version or None} in one query of `manager` (the first found on PATH when None); every name
    {"unreadable": why} when there is no manager or it gives no answer."""
    if not names:
        return {}
    binary = None
    for candidate in [manager] if manager else list(PACKAGE_BINARIES):
        binary, manager = shutil.which(PACKAGE_BINARIES[candidate]), candidate
        if binary:
            break
    if binary is None or manager is None:
        return {name: {UNREADABLE: "no package manager"} for name in names}
    try:
        done = subprocess.run(
            package_query_argv(manager, binary, names),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **C_LOCALE},
            timeout=PACKAGE_QUERY_TIMEOUT,
            check=False,
        )
    except (subprocess.TimeoutExpired, OSError) as exc:
        return {name: {UNREADABLE: f"{PACKAGE_BINARIES[manager]}: {type(exc).__name__}"} for name in names}
    # Both exit non-zero when a name is not installed and still list the others: the output is what counts.
    return parse_package_versions(manager, names, done.stdout.decode("utf-8", "replace"))


def _parent_pid(pid: int) -> Optional[int]:
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as handle:
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    # pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ")".
    fields = text.rpartition(")")[2].split()
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


def own_pids() -> List[int]:
    """This process and its parents up to init: their command lines hold the spec."""
    chain: List[int] = []
    pid: Optional[int] = os.getpid()
    while pid and pid not in chain:
        chain.append(pid)
        pid = _parent_pid(pid)
    return chain


def _real_uid(pid: str) -> Optional[int]:
    try:
        with open(f"{PROC}/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"Uid:"):
                    return int(line.split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return None


def matching_processes(uid: int, prefix: str) -> List[str]:
    """Sorted "PID CMDLINE" of the processes of real user `uid` with an argument that starts with `prefix` (a program
    or file of a run's folder): text that only holds the prefix somewhere, such as a probe's spec on an ssh command
    line, does not count."""
    skipped = {str(pid) for pid in own_pids()}
    found: List[str] = []
    try:
        pids = [name for name in os.listdir(PROC) if name.isdigit()]
    except OSError:
        raise ProbeError(f"{PROC} cannot be listed: the process check needs Linux with /proc") from None
    for pid in pids:
        if pid in skipped or _real_uid(pid) != uid:
            continue
        try:
            with open(f"{PROC}/{pid}/cmdline", "rb") as handle:
                raw = handle.read()
        except OSError:
            continue  # gone since the listing
        arguments = raw.rstrip(b"\0").decode("utf-8", "replace").split("\0")
        cmdline = " ".join(arguments)
        if any(argument.startswith(prefix) for argument in arguments):
            found.append(f"{pid} {cmdline[:CMDLINE_LIMIT]}")
    return sorted(found)


def disk_free(path: str) -> Optional[int]:
    """Bytes free for an unprivileged user on the file system of `path`, None when it is absent."""
    try:
        info = os.statvfs(path)
    except OSError:
        return None
    return info.f_bavail * info.f_frsize


def boot_id() -> str:
    try:
        with open(BOOT_ID) as handle:
            return handle.read().strip()
    except OSError:
        return ""


# ---------------------------------------------------------------------------------------------------------------
# The spec, the probe and the comparison
# ---------------------------------------------------------------------------------------------------------------


def _paths(spec: Mapping[str, Any], key: str) -> List[str]:
    value = spec.get(key, [])
    if not isinstance(value, list):
        raise ProbeError(f"spec.{key} must be a list of absolute paths, not {type(value).__name__}")
    for item in value:
        _absolute(item, key)
    return list(value)


def _absolute(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise ProbeError(f"spec.{key} must hold absolute paths, not {type(value).__name__}")
    if not value.startswith("/"):
        raise ProbeError(f"spec.{key}: '{value}' is not an absolute path")
    return value


def _subkeys(value: Any, key: str, known: Iterable[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ProbeError(f"spec.{key} must be a dict, not {type(value).__name__}")
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise ProbeError(f"unknown keys in spec.{key}: {', '.join(map(str, unknown))} (known: {', '.join(known)})")
    return value


def check_spec(spec: Any) -> Dict[str, Any]:
    """The spec with every key (empty where not given), or ProbeError naming the key that is wrong."""
    if not isinstance(spec, Mapping):
        raise ProbeError(f"the spec must be a dict, not {type(spec).__name__}")
    unknown = sorted(set(spec) - set(SPEC_KEYS))
    if unknown:
        raise ProbeError(f"unknown spec keys {', '.join(map(str, unknown))} (known: {', '.join(SPEC_KEYS)})")
    checked: Dict[str, Any] = {key: _paths(spec, key) for key in ("files", "trees", "absent")}

    venv = spec.get("venv", "")
    checked["venv"] = venv if venv == "" else _absolute(venv, "venv")

    packages = _subkeys(spec.get("packages", {}), "packages", ("manager", "names"))
    names = packages.get("names", [])
    if not isinstance(names, list) or not all(isinstance(name, str) and name for name in names):
        raise ProbeError("spec.packages.names must be a list of package names")
    manager = packages.get("manager")
    if manager is not None and manager not in PACKAGE_BINARIES:
        raise ProbeError(f"spec.packages.manager must be {' or '.join(PACKAGE_BINARIES)}, not {manager!r}")
    checked["packages"] = {"manager": manager, "names": list(names)}

    processes = spec.get("processes")
    if processes is not None:
        processes = _subkeys(processes, "processes", ("user", "prefix"))
        user, prefix = processes.get("user"), processes.get("prefix")
        if not isinstance(user, int) or isinstance(user, bool) or user < 0:
            raise ProbeError(f"spec.processes.user must be a uid (a number), not {user!r}")
        if not isinstance(prefix, str) or not prefix:
            raise ProbeError("spec.processes.prefix must be the text a run's arguments start with")
        processes = {"user": user, "prefix": prefix}
    checked["processes"] = processes

    disk = spec.get("disk")
    checked["disk"] = None if disk is None else _absolute(disk, "disk")
    return checked


def probe(spec: Mapping[str, Any]) -> Dict[str, Any]:
    """The live state of this node for `spec` (see check_spec); every key of the result is always there."""
    checked = check_spec(spec)
    packages = checked["packages"]
    processes = checked["processes"]
    return {
        "boot_id": boot_id(),
        "kernel": os.uname().release,
        "python": sys.version.split()[0],
        "files": {path: file_state(path) for path in checked["files"]},
        "trees": {path: tree_sha256(path) for path in checked["trees"]},
        "venv": venv_state(checked["venv"]),
        "packages": package_versions(packages["manager"], packages["names"]),
        "present": sorted(path for path in set(checked["absent"]) if os.path.lexists(path)),
        "processes": matching_processes(processes["user"], processes["prefix"]) if processes else [],
        "disk_free": disk_free(checked["disk"]) if checked["disk"] else None,
    }


def fingerprint(result: Mapping[str, Any]) -> Dict[str, Any]:
    """The part of a probe's result that a record keeps (not what must be absent, the processes or the free disk:
    the launch checks those anew every time)."""
    empty: Dict[str, Any] = {"boot_id": "", "kernel": "", "python": "", "files": {}, "trees": {}, "venv": None}
    return {key: result.get(key, empty.get(key, {})) for key in FINGERPRINT_KEYS}


def _unread(value: Any) -> bool:
    return isinstance(value, Mapping) and UNREADABLE in value


def unreadable(live: Mapping[str, Any]) -> List[str]:
    """The parts of a fingerprint that could not be read, as "part: name (why)"."""
    found: List[str] = []

    def walk(value: Any, where: str) -> None:
        if _unread(value):
            found.append(f"{where} ({value[UNREADABLE]})")
        elif isinstance(value, Mapping):
            for key in sorted(value):
                walk(value[key], f"{where}: {key}" if where else str(key))

    # The stamps a record names say for themselves whether they hold (differences).
    walk({key: value for key, value in live.items() if key != "stamps"}, "")
    return found


def _shown(items: List[str], separator: str = "; ") -> str:
    more = len(items) - SHOWN_NAMES
    return separator.join(items[:SHOWN_NAMES]) + (f"{separator.rstrip()} and {more} more" if more > 0 else "")


def _path_changes(part: str, recorded: Mapping[str, Any], live: Mapping[str, Any]) -> List[str]:
    changes: List[str] = []
    for path in sorted(set(recorded) | set(live)):
        name = f"{part}: {path}"
        if path not in recorded:
            changes.append(f"{name} was not probed when the record was written")
        elif path not in live:
            changes.append(f"{name} is not probed now")
        elif _unread(live[path]):
            # Unreadable then and now is no proof that nothing changed.
            changes.append(f"{name} cannot be read ({live[path][UNREADABLE]})")
        elif recorded[path] == live[path]:
            continue
        elif recorded[path] is None:
            changes.append(f"{name} appeared" if part != "packages" else f"{name} is installed now ({live[path]})")
        elif live[path] is None:
            gone = f"is no longer installed (it was {recorded[path]})" if part == "packages" else "is gone"
            changes.append(f"{name} {gone}")
        elif part == "packages":
            changes.append(f"{name} {recorded[path]} -> {live[path]}")
        else:
            changes.append(f"{name} changed")
    return changes


def _venv_changes(recorded: Any, live: Any) -> List[str]:
    if _unread(live):
        return [f"venv: cannot be read ({live[UNREADABLE]})"]
    if live and _unread(live.get("pyvenv_cfg")):
        return [f"venv: {live.get('path')}: pyvenv.cfg cannot be read ({live['pyvenv_cfg'][UNREADABLE]})"]
    if recorded == live:
        return []
    path = (live or {}).get("path") or (recorded or {}).get("path")
    if not recorded or _unread(recorded):
        return [f"venv: {path} appeared" if not recorded else f"venv: {path} could not be read when recorded"]
    if not live:
        return [f"venv: {path} is gone"]
    changes: List[str] = []
    if recorded.get("path") != live.get("path"):
        changes.append(f"venv: {recorded.get('path')} -> {live.get('path')}")
    old, new = recorded.get("distributions"), live.get("distributions")
    if not isinstance(old, dict) or not isinstance(new, dict):
        return [*changes, f"venv: {path}: its distributions cannot be compared (not a dict)"]
    items = [f"added {key} {new[key]}" for key in sorted(set(new) - set(old))]
    items += [f"removed {key} {old[key]}" for key in sorted(set(old) - set(new))]
    items += [f"{key} {old[key]} -> {new[key]}" for key in sorted(set(old) & set(new)) if old[key] != new[key]]
    if recorded.get("pyvenv_cfg") != live.get("pyvenv_cfg"):
        items.append("pyvenv.cfg changed")
    if items:
        changes.append(f"venv: {path}: {_shown(items)}")
    return changes


def _part_changes(part: str, old: Any, new: Any) -> List[str]:
    if part == "boot_id":
        # Without a boot id a reboot cannot be seen: never take that for "unchanged".
        return ["boot_id: cannot be read"] if not new else ["boot_id: another boot"] if old != new else []
    if part in PATH_PARTS:
        return _path_changes(part, old, new)
    if part == "venv":
        return _venv_changes(old, new)
    if old == new:
        return []
    if isinstance(old, Mapping) or isinstance(new, Mapping):
        # A part on one side only (a record of another probe) names what it holds, never its values.
        old, new = (side if isinstance(side, Mapping) else {} for side in (old, new))
        names = sorted(str(name) for name in set(old) | set(new) if old.get(name) != new.get(name))
        shown = _shown(names, ", ")
        # A named stamp that no longer holds says why, as its own role would.
        unheld = unheld_stamps({name: new.get(name) for name in names}) if part == "stamps" else []
        return [f"{part}: {shown}" + (f" ({'; '.join(unheld)})" if unheld else "")]
    return [f"{part}: {old or 'unknown'} -> {new or 'unknown'}"]


def unheld_stamps(stamps: Mapping[str, Any]) -> List[str]:
    """Sentences for the stamps a record names (its fingerprint's `stamps`: {role: {"holds", "reason"}}) that do
    not hold, by role and reason."""
    problems = []
    for role, state in sorted(stamps.items()):
        state = state if isinstance(state, Mapping) else {}
        if state.get("holds") is not True:
            problems.append(f"the stamp of {role} does not hold ({state.get('reason') or 'no reason given'})")
    return problems


def differences(recorded: Any, live: Any) -> List[str]:
    """What differs between a recorded fingerprint and the live one, as "part: what" sentences that name a file, a
    folder, a distribution or a package and never a file's contents; [] when they are the same. What cannot be read
    is always a difference."""
    for side, value in (("recorded", recorded), ("live", live)):
        if not isinstance(value, Mapping):
            return [f"the {side} fingerprint cannot be compared (not a dict)"]
    old, new = dict(recorded), dict(live)
    changes: List[str] = []
    # A damaged record (or result) must never read as "unchanged": a part of the wrong type is a difference.
    for part in (*PATH_PARTS, "venv"):
        for side, value in (("recorded", old), ("live", new)):
            if part in value and not isinstance(value[part], dict) and not (part == "venv" and value[part] is None):
                changes.append(f"the {side} {part} cannot be compared (not a dict)")
                old[part] = new[part] = None if part == "venv" else {}
    known = [part for part in FINGERPRINT_KEYS if part in old or part in new]
    for part in known + sorted((set(old) | set(new)) - set(known)):
        empty = {} if part in PATH_PARTS else None
        changes += _part_changes(part, old.get(part, empty), new.get(part, empty))
    if not changes:
        # What the sentences above do not see (a key of its own in a part): still a difference.
        changes = [f"{part}: differs" for part in sorted(set(old) | set(new)) if old.get(part) != new.get(part)]
    return changes


def decide(
    record: Optional[Mapping[str, Any]],
    inputs: str,
    live: Optional[Mapping[str, Any]],
    boot_id: Optional[str],
    force: bool = False,
    now: Optional[float] = None,
) -> Tuple[bool, str]:
    """(holds, reason): the one decision over every record of the collection.

    `record` holds "inputs_hash", "boot_id", "fingerprint" and "time" (None: there is no usable record). It holds
    only when it is of these `inputs`, from this boot, and `live` (the fingerprint taken now) is readable and equal
    to its own. `boot_id` None: the record is of no one node (the smoke test's, whose inputs hash every node's boot
    id). No clock decides: `now` only says, in the reason, how old the record is.
    """
    if force:
        return False, "a full run was asked for (node_stamp_force)"
    if record is None:
        return False, "no stamp of an earlier run"
    if record.get("inputs_hash") != inputs:
        return False, "the role's inputs changed (collection version or code, role files or variables)"
    if boot_id is not None and not boot_id:
        return False, "the node's boot id cannot be read"
    if boot_id is not None and record.get("boot_id") != boot_id:
        return False, "the node rebooted since the stamp was written"
    if not isinstance(live, Mapping):
        return False, "the node could not be fingerprinted"
    unread = unreadable(live)
    if unread:
        # What cannot be read cannot be compared: equal to itself, it would let a changed node skip.
        return False, "the node could not be fingerprinted: " + "; ".join(unread)
    changes = differences(record.get("fingerprint"), live)
    if changes:
        return False, "the node changed since the stamp: " + "; ".join(changes)
    written = record.get("time")
    if now is None or isinstance(written, bool) or not isinstance(written, (int, float)):
        return True, "the node is as the stamp found it"
    return True, f"the node is as the stamp of {max(int(now - written), 0)} s ago found it"


def main(argv: List[str]) -> int:
    """`python3 node_probe.py SPEC_JSON` (or `python3 - SPEC_JSON < node_probe.py`): one JSON line, exit 0."""
    try:
        if len(argv) != 1:
            raise ProbeError(f"give the spec as one JSON argument, not {len(argv)} arguments")
        try:
            spec = json.loads(argv[0])
        except ValueError as exc:
            raise ProbeError(f"the spec is not JSON ({exc})") from None
        answer: Dict[str, Any] = {"ok": True, "result": probe(spec)}
    except ProbeError as exc:
        answer = {"ok": False, "error": str(exc)}
    except Exception as exc:  # the caller must read a reason, whatever went wrong
        answer = {"ok": False, "error": f"the probe failed: {type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(answer, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    # sys.exit's equivalent; ansible-test's pylint refuses a sys.exit call in module_utils.
    raise SystemExit(main(sys.argv[1:]))
