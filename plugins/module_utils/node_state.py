# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node role's record (a stamp): its format, its file name, and the hash of a role's inputs.

A node role writes a stamp (JSON) after its checks passed: the hash of its inputs, what it probed on the node
(`probe`: the distro packages, the virtualenv, the files, the AMX probe, other roles' stamps), the live fingerprint
of that probe (module_utils.node_probe, the one probe language), the boot id, the time and the facts it published.
On the next run `run` reads the stamp, takes the same probe again and node_probe.decide says whether the role may
be skipped. Standard library only, Python 3.8+ (this runs on the nodes): amx.cluster.node_record and
amx.cluster.provision_stamp send it with `answer` as the entry point (plugin_utils/node_bundle.py), the
amx.cluster.node_state module calls `run` where the connection cannot take a bundle.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.amx.cluster.plugins.module_utils import node_probe
from ansible_collections.amx.cluster.plugins.module_utils.cpu_info import CpuInfoError, gather_cpu_facts, probe_amx
from ansible_collections.amx.cluster.plugins.module_utils.files import ABSENT, read_root_record, write_atomically
from ansible_collections.amx.cluster.plugins.module_utils.node_probe import canonical_json

__all__ = [
    "AMX_KEYS",
    "ARGUMENT_SPEC",
    "PROBE_KEYS",
    "STAMP_FORMAT",
    "STAMP_KEYS",
    "NodeStateError",
    "StampError",
    "amx_fingerprint",
    "answer",
    "build_stamp",
    "canonical_json",
    "check_named_stamps",
    "check_probe",
    "inputs_hash",
    "parse_boot_id",
    "parse_stamp",
    "probe_spec",
    "record_name",
    "records_to_remove",
    "run",
    "same_record",
    "sha256_text",
    "stamp_digest",
    "stamp_text",
    "version_from_galaxy",
]

# 2: the fingerprint is node_probe's (a stamp of format 1 is not trusted: the role runs in full once).
STAMP_FORMAT = 2
# The keys of a probe, and what each one names on the node.
PROBE_KEYS = ("packages", "venv", "manifest", "files", "amx", "stamps")
# What a probe's `stamps` gives each stamp it names (the stamps of the node roles, in the provision stamp).
NAMED_STAMP_KEYS = ("inputs_hash",)
ROLE_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
# The parts of the cpu_facts result that say whether AMX is usable and how much of the CPU a process may use.
AMX_KEYS = (
    "model_name",
    "architecture",
    "flags",
    "kernel_release",
    "logical_cpus",
    "allowed_cpus",
    "amx_usable",
    "amx_reason",
)
STAMP_KEYS = ("format", "role", "inputs_hash", "probe", "fingerprint", "boot_id", "time", "facts", "node_facts")
# Records kept per role, each under its inputs: two checkouts or controllers with other inputs keep their own.
RECORDS_KEPT = 4


# A stamp or a probe that cannot be used; the message names what is wrong, never the file's contents.
StampError = node_probe.ProbeError

CPUINFO = "/proc/cpuinfo"

# The parameters of a read or a write of a record: the node_state module's argument spec, and what the actions
# validate on the controller before they send a call (each key is documented in modules/node_state.py).
ARGUMENT_SPEC: Dict[str, Any] = {
    "role": {"type": "str", "required": True},
    "inputs_hash": {"type": "str", "required": True},
    "stamp_dir": {"type": "path", "default": "/var/lib/amx-cluster/stamps"},
    "force": {"type": "bool", "default": False},
    "write": {"type": "bool", "default": False},
    # No default: Ansible's validator would fill a shared {} with the suboptions' defaults in place.
    "probe": {
        "type": "dict",
        "options": {
            "packages": {"type": "list", "elements": "str", "default": []},
            "venv": {"type": "path"},
            "manifest": {"type": "path"},
            "files": {"type": "list", "elements": "path", "default": []},
            "amx": {"type": "bool", "default": False},
            "stamps": {"type": "dict", "default": {}},
        },
    },
    "facts": {"type": "dict", "default": {}},
    "node_facts": {"type": "dict", "default": {}},
}


class NodeStateError(Exception):
    """What stops a read or a write, said so that a person can act on it."""


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------------------------------
# Controller side: the hash of a role's inputs
# ---------------------------------------------------------------------------------------------------------------


def inputs_hash(collection_version: str, role_files: Mapping[str, str], variables: Mapping[str, Any]) -> str:
    """The hash of what a role's result depends on besides the node.

    `role_files` maps each file of the role and of the collection's plugin code (relative path) to the sha256 of
    its bytes; `variables` the role's options, resolved. A change of any of them, or of the collection version,
    gives another hash.
    """
    if not isinstance(collection_version, str) or not collection_version:
        raise StampError("the collection version is empty: the collection's galaxy.yml or MANIFEST.json has none")
    if not isinstance(variables, Mapping):
        raise StampError(f"the role's variables must be a dict of name -> value, not {type(variables).__name__}")
    return sha256_text(
        canonical_json({"collection": collection_version, "files": dict(role_files), "variables": dict(variables)})
    )


def version_from_galaxy(text: str) -> str:
    """The `version:` of a galaxy.yml (a top-level key), without a YAML parser; empty when there is none."""
    for line in text.splitlines():
        match = re.match(r"""^version:\s*["']?([^"'#\s]+)["']?\s*(#.*)?$""", line)
        if match:
            return match.group(1)
    return ""


# ---------------------------------------------------------------------------------------------------------------
# Node side: parsing what the node says
# ---------------------------------------------------------------------------------------------------------------


def parse_boot_id(text: str) -> str:
    """The boot id of /proc/sys/kernel/random/boot_id (a UUID, new at every boot)."""
    value = text.strip()
    if not re.match(r"^[0-9a-fA-F-]{16,64}$", value):
        raise StampError("/proc/sys/kernel/random/boot_id does not hold a boot id")
    return value.lower()


def amx_fingerprint(cpu_facts: Mapping[str, Any]) -> Dict[str, Any]:
    """The part of cpu_facts' result (module_utils.cpu_info.gather_cpu_facts) that a stamp compares."""
    return {key: cpu_facts.get(key) for key in AMX_KEYS}


def check_probe(probe: Any) -> Dict[str, Any]:
    """The probe with every key (empty where not given), or StampError naming the key that is wrong."""
    if not isinstance(probe, Mapping):
        raise StampError(f"the probe must be a dict, not {type(probe).__name__}")
    unknown = sorted(set(probe) - set(PROBE_KEYS))
    if unknown:
        raise StampError(f"unknown probe keys {', '.join(unknown)} (known: {', '.join(PROBE_KEYS)})")
    checked: Dict[str, Any] = {}
    for key in ("packages", "files"):
        value = probe.get(key) or []
        if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
            raise StampError(f"probe.{key} must be a list of names, not {value!r}")
        checked[key] = sorted(set(value))
    for key in ("venv", "manifest"):
        value = probe.get(key) or ""
        if not isinstance(value, str):
            raise StampError(f"probe.{key} must be a path, not {type(value).__name__}")
        checked[key] = value
    for path in checked["files"] + [checked["venv"], checked["manifest"]]:
        if path and not path.startswith("/"):
            raise StampError(f"probe path '{path}' is not absolute")
    amx = probe.get("amx", False)
    if not isinstance(amx, bool):
        raise StampError(f"probe.amx must be true or false, not {amx!r}")
    checked["amx"] = amx
    checked["stamps"] = check_named_stamps(probe.get("stamps") or {})
    return checked


def probe_spec(probe: Mapping[str, Any]) -> Dict[str, Any]:
    """node_probe's spec for a stamp's checked probe (the manifest is one more file; `amx` and `stamps` are read by
    the module)."""
    files = probe["files"] + ([probe["manifest"]] if probe["manifest"] else [])
    return {"files": sorted(set(files)), "venv": probe["venv"], "packages": {"names": probe["packages"]}}


def check_named_stamps(stamps: Any) -> Dict[str, Dict[str, Any]]:
    """A probe's `stamps`: {role: {"inputs_hash": the role's inputs hash}}, the stamps of other
    roles that must still hold (each read and decided as its role would), or StampError naming what is wrong."""
    if not isinstance(stamps, Mapping):
        raise StampError(f"probe.stamps must be a dict of role -> {{inputs_hash}}, not {type(stamps).__name__}")
    checked: Dict[str, Dict[str, Any]] = {}
    for role, want in stamps.items():
        if not isinstance(role, str) or not ROLE_NAME.match(role):
            raise StampError(f"probe.stamps: '{role}' is not a role name (lower case letters, digits and _)")
        if not isinstance(want, Mapping) or sorted(want) != sorted(NAMED_STAMP_KEYS):
            raise StampError(f"probe.stamps.{role} must hold exactly {' and '.join(NAMED_STAMP_KEYS)}")
        inputs = want["inputs_hash"]
        if not isinstance(inputs, str) or not re.match(r"[0-9a-f]{64}\Z", inputs):
            raise StampError(f"probe.stamps.{role}.inputs_hash must be a sha256 hex digest")
        checked[role] = {"inputs_hash": inputs}
    return dict(sorted(checked.items()))


# ---------------------------------------------------------------------------------------------------------------
# The stamp and the decision
# ---------------------------------------------------------------------------------------------------------------


def stamp_digest(stamp: Mapping[str, Any]) -> str:
    """The sha256 of a stamp's contents without its digest: a stamp edited by hand no longer matches."""
    return sha256_text(canonical_json({key: stamp.get(key) for key in STAMP_KEYS}))


def build_stamp(
    role: str,
    inputs: str,
    probe: Mapping[str, Any],
    fingerprint: Mapping[str, Any],
    boot_id: str,
    now: float,
    facts: Optional[Mapping[str, Any]] = None,
    node_facts: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """The stamp a role writes after its checks passed, with its digest."""
    stamp: Dict[str, Any] = {
        "format": STAMP_FORMAT,
        "role": role,
        "inputs_hash": inputs,
        "probe": check_probe(probe),
        "fingerprint": dict(fingerprint),
        "boot_id": boot_id,
        "time": int(now),
        "facts": dict(facts or {}),
        "node_facts": dict(node_facts or {}),
    }
    # The round trip through JSON makes the digest the one a reader computes from the file.
    stamp = json.loads(canonical_json(stamp))
    stamp["digest"] = stamp_digest(stamp)
    return stamp


def same_record(earlier: Mapping[str, Any], stamp: Mapping[str, Any]) -> bool:
    """Whether two stamps record the same thing (their times and digests aside)."""
    keys = [key for key in STAMP_KEYS if key != "time"]
    return all(earlier.get(key) == stamp.get(key) for key in keys)


def stamp_text(stamp: Mapping[str, Any]) -> str:
    return json.dumps(stamp, sort_keys=True, indent=1) + "\n"


def parse_stamp(text: str, role: str) -> Dict[str, Any]:
    """The stamp of `role` from its file's text; StampError when it is not one that this version wrote."""
    try:
        stamp = json.loads(text)
    except ValueError:
        raise StampError("the stamp is not JSON") from None
    if not isinstance(stamp, dict):
        raise StampError("the stamp is not a JSON object")
    if stamp.get("format") != STAMP_FORMAT:
        raise StampError(f"the stamp's format is not {STAMP_FORMAT}")
    missing = [key for key in (*STAMP_KEYS, "digest") if key not in stamp]
    if missing:
        raise StampError(f"the stamp lacks {', '.join(missing)}")
    if stamp.get("digest") != stamp_digest(stamp):
        raise StampError("the stamp was edited (its digest does not match its contents)")
    if stamp.get("role") != role:
        raise StampError(f"the stamp is of role '{stamp.get('role')}', not '{role}'")
    if not isinstance(stamp.get("time"), int) or isinstance(stamp.get("time"), bool):
        raise StampError("the stamp's time is not a number of seconds")
    for key in ("fingerprint", "facts", "node_facts"):
        if not isinstance(stamp[key], dict):
            raise StampError(f"the stamp's {key} is not a dict")
    check_probe(stamp["probe"])
    return stamp


def record_name(role: str, inputs: str) -> str:
    """The file name of the record of `role` for `inputs` (a role keeps one record per inputs hash)."""
    return f"{role}.{sha256_text(inputs)[:16]}.json"


def records_to_remove(role: str, entries: Mapping[str, float], keep: int = RECORDS_KEPT) -> List[str]:
    """Of the files `entries` ({name: modification time}) of a stamp folder, the records of `role` past the `keep`
    newest, oldest last: what is removed after a record is written. Other roles' files are never named."""
    pattern = re.compile(re.escape(role) + r"\.[0-9a-f]{16}\.json\Z")
    records = sorted((name for name in entries if pattern.match(name)), key=lambda name: (-entries[name], name))
    return records[max(keep, 0) :]


# ---------------------------------------------------------------------------------------------------------------
# On the node: read and decide, or write
# ---------------------------------------------------------------------------------------------------------------


def amx_state() -> Dict[str, Any]:
    """The facts of module_utils.cpu_info (as cpu_facts computes them, lscpu aside) that decide AMX."""
    try:
        with open(CPUINFO) as handle:
            cpuinfo = handle.read()
        uname = os.uname()
        facts = gather_cpu_facts(
            cpuinfo,
            None,
            machine=uname.machine,
            kernel_release=uname.release,
            probe=probe_amx(uname.machine),
            allowed_cpus=sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        )
    except (OSError, CpuInfoError) as exc:
        return {node_probe.UNREADABLE: type(exc).__name__}
    return amx_fingerprint(facts)


def named_stamps_state(stamp_dir: str, stamps: Mapping[str, Any], boot_id: str, now: float) -> Dict[str, Any]:
    """{role: {"holds": true, "digest"} | {"holds": false, "reason"}} for the stamps a probe names: each read and
    decided as its own role decides it (its inputs hash as the probe gives it)."""
    state: Dict[str, Any] = {}
    for role, want in stamps.items():
        stamp, why = read_stamp(stamp_dir, role, want["inputs_hash"])
        if stamp is not None and stamp["probe"]["stamps"]:
            stamp, why = None, "it names stamps of its own"
        if stamp is None:
            state[role] = {"holds": False, "reason": why}
            continue
        live = fingerprint(stamp["probe"], stamp_dir, boot_id, now)
        holds, why = node_probe.decide(stamp, want["inputs_hash"], live, boot_id, now=now)
        state[role] = {"holds": True, "digest": stamp["digest"]} if holds else {"holds": False, "reason": why}
    return state


def fingerprint(probe: Mapping[str, Any], stamp_dir: str, boot_id: str, now: float) -> Dict[str, Any]:
    """node_probe's fingerprint of a stamp's probe, with the AMX facts and the stamps it names."""
    live = node_probe.fingerprint(node_probe.probe(probe_spec(probe)))
    # The Python that runs this is Ansible's interpreter, not a role's: the virtualenv's own is in its pyvenv.cfg.
    live.pop("python")
    if probe["amx"]:
        live["amx"] = amx_state()
    if probe["stamps"]:
        live["stamps"] = named_stamps_state(stamp_dir, probe["stamps"], boot_id, now)
    return live


def read_stamp(stamp_dir: str, role: str, inputs: str) -> Tuple[Optional[Dict[str, Any]], str]:
    """(stamp or None, why not) of the record of `role` for `inputs`: only a regular file of root's with mode 0600
    is read."""
    path = os.path.join(stamp_dir, record_name(role, inputs))
    text, why = read_root_record(path)
    if text is None and why == ABSENT:
        if records_to_remove(role, stamp_entries(stamp_dir), keep=0):
            why = "the role's inputs changed (collection version or code, role files or variables): no stamp of them"
            return None, why
        return None, "no stamp of an earlier run"
    if text is None:
        return None, f"the stamp {path} {why}: not trusted"
    try:
        return parse_stamp(text, role), ""
    except StampError as exc:
        return None, f"{exc}: not trusted"


def stamp_entries(stamp_dir: str) -> Dict[str, float]:
    """{name: modification time} of the files of the stamp folder ({} when there is none)."""
    try:
        names = os.listdir(stamp_dir)
    except OSError:
        return {}
    entries = {}
    for name in names:
        try:
            entries[name] = os.lstat(os.path.join(stamp_dir, name)).st_mtime
        except OSError:
            continue
    return entries


def write_stamp(directory: str, path: str, text: str, role: str) -> None:
    os.makedirs(directory, mode=0o700, exist_ok=True)
    write_atomically(path, text, mode=0o600, prefix=".stamp-")
    # The newest records of the role stay, one per inputs: another checkout's record is not this one's to replace.
    for name in records_to_remove(role, stamp_entries(directory)):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(directory, name))


def run(params: Mapping[str, Any], check_mode: bool) -> Dict[str, Any]:
    """The result of a read (decide) or, with params["write"], a write (not in check mode) of a role's record;
    `params` as ARGUMENT_SPEC validated them."""
    role = params["role"]
    if not ROLE_NAME.match(role):
        raise NodeStateError(f"role '{role}' is not a role name (lower case letters, digits and _)")
    path = os.path.join(params["stamp_dir"], record_name(role, params["inputs_hash"]))
    try:
        boot_id = parse_boot_id(node_probe.boot_id())
    except StampError as exc:
        raise NodeStateError(f"cannot read the boot id of this node ({exc}); it needs Linux with /proc") from None
    result: Dict[str, Any] = dict(changed=False, skip=False, written=False, boot_id=boot_id, facts={}, stamp_path=path)
    now = time.time()

    if params["write"]:
        try:
            probe = check_probe({key: value for key, value in (params["probe"] or {}).items() if value is not None})
        except StampError as exc:
            raise NodeStateError(f"the probe of role {role} is wrong: {exc}") from None
        live = fingerprint(probe, params["stamp_dir"], boot_id, now)
        unheld = node_probe.unheld_stamps(live.get("stamps") or {})
        if unheld:
            # A record that rests on stamps that do not hold would let the next run skip what must run.
            result.update(reason="no stamp written: " + "; ".join(unheld), fingerprint=live)
            return result
        stamp = build_stamp(
            role, params["inputs_hash"], probe, live, boot_id, now, params["facts"], params["node_facts"]
        )
        earlier, _why = read_stamp(params["stamp_dir"], role, params["inputs_hash"])
        renewed = earlier is not None and same_record(earlier, stamp)
        if not check_mode:
            try:
                write_stamp(params["stamp_dir"], path, stamp_text(stamp), role)
            except OSError as exc:
                raise NodeStateError(f"cannot write the stamp {path} ({exc}): run the task with become: true") from None
        result.update(
            changed=not renewed,
            written=not check_mode,
            reason="stamp renewed (the same record, a new time)" if renewed else "stamp written",
            fingerprint=live,
        )
        return result

    stamp, why = read_stamp(params["stamp_dir"], role, params["inputs_hash"])
    live = fingerprint(stamp["probe"], params["stamp_dir"], boot_id, now) if stamp is not None else None
    if stamp is None and not params["force"]:
        skip, reason = False, why
    else:
        skip, reason = node_probe.decide(stamp, params["inputs_hash"], live, boot_id, params["force"], now)
    result.update(skip=skip, reason=reason, fingerprint=live or {})
    if skip:
        result["facts"] = stamp["facts"]
        result["ansible_facts"] = stamp["node_facts"]
    return result


def node_paths(params: Mapping[str, Any], spec: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """`params` with `~` and $VARIABLES of the path options of `spec` (ARGUMENT_SPEC) expanded on the node, as the
    module's would be: the controller checks them as text, since a `~` means a home on the node."""
    expanded = dict(params)
    for name, option in (ARGUMENT_SPEC if spec is None else spec).items():
        value = expanded.get(name)
        if value is None:
            continue
        if option["type"] == "path":
            expanded[name] = os.path.expanduser(os.path.expandvars(value))
        elif option.get("elements") == "path":
            expanded[name] = [os.path.expanduser(os.path.expandvars(item)) for item in value]
        elif "options" in option:
            expanded[name] = node_paths(value, option["options"])
    return expanded


def answer(call: Mapping[str, Any]) -> Dict[str, Any]:
    """node_bundle's entry point: {"params", "check_mode"} -> run's result, or {"failed": true, "msg"}."""
    try:
        return run(node_paths(call["params"]), bool(call["check_mode"]))
    except NodeStateError as exc:
        return {"failed": True, "msg": f"node_state: {exc}"}
