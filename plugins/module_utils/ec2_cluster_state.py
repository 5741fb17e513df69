# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The controller's files of an EC2 cluster: one folder per region, and a manifest of what the collection wrote.

Layout: ``<ec2_cluster_state_dir>/<region>/`` holds the created private key (``amx-<name>.pem``) and the nodes'
``known_hosts`` of the cluster in that region, and ``.amx-cluster-files.json``, the manifest: the names of the
files the collection wrote there, with their kind. A teardown removes only the files its manifest lists (never a
file someone else put in the folder), keeps a private key while the cluster still has instances in that region,
and removes a folder only when it is empty.

Pure functions (no AWS, no file system) so that the rules are unit-tested; the module does the I/O.
Standard library only: the module runs on the controller's Python, which may be 3.8.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

MANIFEST = ".amx-cluster-files.json"
FORMAT = 1
KINDS = ("private_key", "known_hosts")
REGION_PATTERN = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]+$")
_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class StateError(ValueError):
    """A manifest or a request that the rules refuse; the message is meant for a person."""


def check_region(region: str) -> str:
    if not REGION_PATTERN.match(region or ""):
        raise StateError(f"region {region!r} is not an AWS region name (e.g. eu-west-1)")
    return region


def check_name(name: str) -> str:
    """A file name inside the region folder: no path, no '..', not the manifest itself."""
    if not isinstance(name, str) or not _NAME_PATTERN.match(name) or name == MANIFEST or ".." in name:
        raise StateError(f"{name!r} is not a plain file name the collection writes (letters, digits, '.', '_', '-')")
    return name


def empty_manifest(cluster: str, region: str) -> Dict[str, Any]:
    return {"format": FORMAT, "cluster": cluster, "region": check_region(region), "files": {}}


def parse_manifest(text: str, cluster: str, region: str, where: str) -> Dict[str, Any]:
    """Read a manifest; refuse one that is not ours or belongs to another cluster or region (never echoes it)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise StateError(f"{where} is not a manifest of amx.cluster (not JSON): move it away and run again") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("files"), dict):
        raise StateError(f"{where} is not a manifest of amx.cluster (format {FORMAT}): move it away and run again")
    if data.get("cluster") != cluster or data.get("region") != region:
        raise StateError(
            f"{where} records the files of cluster {data.get('cluster')!r} in region {data.get('region')!r}, not of "
            f"{cluster!r} in {region!r}: ec2_cluster_state_dir is shared by two clusters; give each its own"
        )
    for name, kind in data["files"].items():
        check_name(name)
        if kind not in KINDS:
            raise StateError(f"{where} lists {name} with an unknown kind: move the manifest away and run again")
    return data


def record(manifest: Mapping[str, Any], files: Mapping[str, str]) -> Tuple[Dict[str, Any], List[str]]:
    """The manifest with these files (name -> kind) added, and the names that were new."""
    updated = dict(manifest)
    updated["files"] = dict(manifest["files"])
    added = []
    for name, kind in sorted(files.items()):
        check_name(name)
        if kind not in KINDS:
            raise StateError(f"unknown kind {kind!r} for {name} (one of {', '.join(KINDS)})")
        if updated["files"].get(name) != kind:
            updated["files"][name] = kind
            added.append(name)
    return updated, added


def plan_removal(
    manifest: Mapping[str, Any], present: Iterable[str], instances_left: int
) -> Tuple[List[str], Dict[str, str]]:
    """Which recorded files to remove, and which to keep with the reason.

    present: the names of the regular files (or links) now in the region folder. A private key is kept while the
    cluster has instances in the region (instances_left > 0): they could not be reached without it.
    """
    present = set(present)
    remove: List[str] = []
    keep: Dict[str, str] = {}
    for name, kind in sorted(manifest["files"].items()):
        if name not in present:
            continue
        if kind == "private_key" and instances_left > 0:
            keep[name] = (
                f"the cluster still has {instances_left} instance(s) in {manifest['region']} that need this key"
            )
            continue
        remove.append(name)
    return remove, keep


def unrecorded(manifest: Optional[Mapping[str, Any]], present: Iterable[str]) -> List[str]:
    """Files in the region folder that the manifest does not list (left alone)."""
    recorded = set(manifest["files"]) if manifest else set()
    return sorted(name for name in present if name not in recorded and name != MANIFEST)


def regions_with_state(entries: Iterable[Tuple[str, bool]], except_region: str = "") -> List[str]:
    """Region folders (name, holds a manifest) of the cluster folder that hold a manifest, but except_region."""
    return sorted(
        name for name, has_manifest in entries if has_manifest and REGION_PATTERN.match(name) and name != except_region
    )


def dump(manifest: Mapping[str, Any]) -> str:
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"
