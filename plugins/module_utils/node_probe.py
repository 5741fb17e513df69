# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node probe: one self-contained file that reads the live state of a node, for the one-step launch.

The master runs it on every worker over the cluster's SSH mesh, in one round trip per node:

    ssh node1 python3 - SPEC_JSON < node_probe.py

and reads one JSON line back: {"ok": true, "result": {...}} or {"ok": false, "error": "..."}. `probe(spec)` says
what the node holds now (file hashes, folder listings, a virtualenv's distributions, package versions, paths that
must be absent, leftover processes, free disk, the boot id and kernel); `fingerprint(result)` is the part that a
recorded launch compares, and `differences(recorded, live)` says by name (never by content) what changed.

Standard library only, Python 3.8+ (it runs on the nodes' system Python), and no import from the collection: the
file is sent as it is. The package and virtualenv helpers that the node state stamp (module_utils.node_state)
uses live here too, so that both read a node the same way.
"""

from __future__ import annotations

import glob
import os
import re
from typing import Dict, Iterable, List, Optional


class ProbeError(ValueError):
    """A spec, or a query, that cannot be used; the message names the key that is wrong, never a file's contents.

    module_utils.node_state knows it as StampError: the package helpers it takes from here raise it.
    """


# ---------------------------------------------------------------------------------------------------------------
# Packages and virtualenvs (shared with module_utils.node_state)
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
