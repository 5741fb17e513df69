# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""When amx.cluster.train's collective smoke test can tell something new.

A passing smoke test leaves a record on the master: the cluster fingerprint it passed on, when, and its figures. A
later launch runs the smoke test again unless the live fingerprint is the record's and the record is young; every
doubt (no record, an edited or unreadable one, one from the future, a stale one, a forced check) runs it.

The fingerprint hashes what the all_reduce's answer depends on: the smoke test's launch script (launcher, hostfile
path, rank layout, environment, MASTER_ADDR and port: the run's folder and id taken out, as they change every run),
the role's scripts, and per node the training stack's manifest, the training Python, the kernel, and the digests of
the files the mesh and the hostfile left (``sha256sum`` output, the boot id among them).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any, Dict, Mapping, Optional, Union

from ansible_collections.amx.cluster.plugins.module_utils.node_probe import decide

__all__ = ["RECORD_VERSION", "parse_checksums", "smoke_fingerprint", "smoke_record", "smoke_test_due"]

RECORD_VERSION = 1
# A sha256sum line: the digest, one space, a space or '*' (text or binary mode), the path; a leading backslash marks
# a path with escaped characters.
CHECKSUM_LINE = re.compile(r"^\\?([0-9a-fA-F]{64}) [ *](.+)$")
RUN_DIR_MARK = "<run_dir>"
RUN_ID_MARK = "<run_id>"


def parse_checksums(text: str, host: str = "?") -> Dict[str, str]:
    """``sha256sum`` output as path -> digest. Missing files are absent (sha256sum says so on stderr)."""
    if not isinstance(text, str):
        raise TypeError(f"{host}: the checksums are sha256sum's output as text, got {type(text).__name__}")
    found: Dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = CHECKSUM_LINE.match(line)
        if not match:
            raise ValueError(f"{host}: line {number} of the checksums is not a sha256sum line")
        found[match.group(2)] = match.group(1).lower()
    return found


def _canonical(value: Any, run_dir: str, run_id: str, where: str) -> Any:
    """JSON-ready copy of value: mappings keyed by text (sorted when dumped), lists in their order, the run's folder
    and id in text replaced by marks."""
    if isinstance(value, Mapping):
        return {str(key): _canonical(item, run_dir, run_id, f"{where}.{key}") for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(item, run_dir, run_id, f"{where}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, str):
        if run_dir:
            value = value.replace(run_dir, RUN_DIR_MARK)
        if run_id:
            value = value.replace(run_id, RUN_ID_MARK)
        return value
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where} is {value}: a fingerprint input must be a finite number")
        return value
    raise TypeError(f"{where} is a {type(value).__name__}: give text, numbers, lists or mappings")


def smoke_fingerprint(
    nodes: Mapping[str, Mapping[str, Any]],
    launch: Mapping[str, Any],
    run_dir: str = "",
    run_id: str = "",
) -> str:
    """The cluster fingerprint the smoke test's answer depends on, as a sha256 hex digest.

    ``nodes``: inventory name -> what the node contributes (its stack's manifest hash, its Python, its kernel...;
    ``checksums``, if given as text, is sha256sum output and is read as path -> digest). ``launch``: what the master
    launches with (the smoke test's launch script, the role scripts' digests, the launcher's own description...).
    Mapping keys are order-free (a node's files, the nodes themselves); lists keep their order (the hostfile's, the
    rank layout's). ``run_dir`` and ``run_id`` are taken out of every text, so that the next run's folder does not
    change the fingerprint."""
    if not isinstance(nodes, Mapping) or not nodes:
        raise ValueError("nodes must map every node's inventory name to its facts (got none)")
    if not isinstance(launch, Mapping):
        raise TypeError(f"launch must be a mapping, got {type(launch).__name__}")
    for name, value in (("run_dir", run_dir), ("run_id", run_id)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be text, got {type(value).__name__}")
    canonical_nodes: Dict[str, Any] = {}
    for host, facts in nodes.items():
        if not isinstance(facts, Mapping):
            raise TypeError(f"{host}: the node's facts must be a mapping, got {type(facts).__name__}")
        facts = dict(facts)
        if isinstance(facts.get("checksums"), str):
            facts["checksums"] = parse_checksums(facts["checksums"], str(host))
        canonical_nodes[str(host)] = _canonical(facts, run_dir, run_id, str(host))
    document = {
        "version": RECORD_VERSION,
        "nodes": canonical_nodes,
        "launch": _canonical(launch, run_dir, run_id, "launch"),
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def smoke_record(fingerprint: str, now: float, figures: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The record a passing smoke test leaves: the fingerprint, when (seconds since the epoch), its figures."""
    if not isinstance(fingerprint, str) or not re.fullmatch(r"[0-9a-f]{64}", fingerprint):
        raise ValueError("fingerprint must be a sha256 hex digest (smoke_fingerprint's answer)")
    if isinstance(now, bool) or not isinstance(now, (int, float)) or not math.isfinite(now):
        raise ValueError(f"now must be seconds since the epoch, got {now!r}")
    return {
        "version": RECORD_VERSION,
        "fingerprint": fingerprint,
        "time": float(now),
        "figures": _canonical(dict(figures or {}), "", "", "figures"),
    }


def _read_record(record: Union[str, Mapping[str, Any], None]) -> Optional[Dict[str, Any]]:
    """The record as written, or None when it is not one (not JSON, fields missing or of another type)."""
    if isinstance(record, str):
        try:
            record = json.loads(record)
        except ValueError:
            return None
    if not isinstance(record, Mapping):
        return None
    stamp = record.get("time")
    if (
        record.get("version") != RECORD_VERSION
        or not isinstance(record.get("fingerprint"), str)
        or isinstance(stamp, bool)
        or not isinstance(stamp, (int, float))
        or not math.isfinite(stamp)
    ):
        return None
    return dict(record)


def smoke_test_due(
    record: Union[str, Mapping[str, Any], None],
    fingerprint: str,
    now: float,
    max_age: float = 86400,
    force: bool = False,
    guarded: bool = True,
) -> Dict[str, Any]:
    """Whether the smoke test runs: ``run`` (bool), ``reason`` (a sentence for the play's output), ``age`` (the
    record's age in seconds, or None) and, when it is skipped, ``figures`` (what the recorded smoke test measured).
    ``record`` is the record file's text ('' or None: there is none). The smoke test is skipped only when the record
    is readable, its fingerprint is the live one, and it is between 0 and ``max_age`` seconds old; every other case
    runs it, never fails. ``guarded`` false (a job that does not watch its first collective, so that a skipped smoke
    test's hang would go unexplained) always runs it."""
    if not isinstance(fingerprint, str) or not fingerprint:
        raise ValueError("fingerprint must be the live cluster fingerprint (smoke_fingerprint's answer)")
    for name, value in (("now", now), ("max_age", max_age)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a number of seconds >= 0, got {value!r}")
    if force:
        return {"run": True, "reason": "a full check was asked for (train_smoke_test_force)", "age": None}
    if not guarded:
        return {
            "run": True,
            "reason": "the job's script does not watch its first collective (only qa_finetune does)",
            "age": None,
        }
    if record is None or (isinstance(record, str) and not record.strip()):
        return {"run": True, "reason": "no record of an earlier smoke test", "age": None}
    found = _read_record(record)
    if found is None:
        return {"run": True, "reason": "the smoke test's record cannot be read (edited or damaged)", "age": None}
    age = float(now) - float(found["time"])
    if age < 0:
        return {"run": True, "reason": "the smoke test's record is dated in the future", "age": age}
    if age > max_age:
        return {
            "run": True,
            "reason": f"the last smoke test is {age:.0f} s old, more than train_smoke_test_max_age ({max_age:g} s)",
            "age": age,
        }
    # The one decision of every record: the smoke test's inputs are its fingerprint, which holds every node's boot id
    # (so no one node's boot id is compared apart); its age above is its own.
    held, _why = decide({"inputs_hash": found["fingerprint"], "fingerprint": {}}, fingerprint, {}, None)
    if not held:
        return {
            "run": True,
            "reason": "the cluster changed since the last smoke test (another fingerprint)",
            "age": age,
        }
    figures = found.get("figures")
    return {
        "run": False,
        "reason": f"the cluster is as it was when the smoke test passed {age:.0f} s ago (same fingerprint)",
        "age": age,
        # What that smoke test measured (its run id, the bf16 probe's oneDNN lines), for this run's record.
        "figures": dict(figures) if isinstance(figures, Mapping) else {},
    }
