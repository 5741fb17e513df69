# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure functions behind torch_stack's source check: is every pinned wheel listed where the profile looks for it?

A profile looks in PEP 503 simple indexes (``<index>/<normalised-name>/``, one page per package), in find-links
pages (one flat HTML page of links) and in local folders. These functions say which pages to read, read the wheel
file names out of a page or a folder, match them against a node's Python and platform tags (PEP 427 file names,
PEP 440 local versions such as ``1.13.0+cpu``) and name every pin that no source lists.

No Ansible imports and no network: the module amx.cluster.stack_sources reads the pages, the unit tests call these
directly. Runs on the node's Python (3.8+) in direct mode.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Set
from urllib.parse import unquote, urljoin, urlsplit

# The package index refuses uploads with a local version label (PEP 440): a ``+cpu`` build is never there.
_LOCAL_SEP = "+"


class WheelName(NamedTuple):
    """The parts of a PEP 427 wheel file name; the tag sets are the compressed ones split at the dots."""

    name: str
    version: str
    pythons: Set[str]
    abis: Set[str]
    platforms: Set[str]


def normalize(name: str) -> str:
    """PEP 503 normalised project name: ``oneccl_bind_pt`` -> ``oneccl-bind-pt``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_wheel(filename: str) -> Optional[WheelName]:
    """``torch-1.13.0+cpu-cp38-cp38-linux_x86_64.whl`` -> its parts; None for what is not a wheel file name."""
    base = unquote(filename.rsplit("/", 1)[-1].split("#", 1)[0])
    if not base.endswith(".whl"):
        return None
    parts = base[:-4].split("-")
    if len(parts) not in (5, 6) or not all(parts):
        return None
    return WheelName(
        normalize(parts[0]),
        parts[1],
        set(parts[-3].split(".")),
        set(parts[-2].split(".")),
        set(parts[-1].split(".")),
    )


def version_matches(pin: str, version: str) -> bool:
    """PEP 440 ``==pin``: a pin without a local label takes any local build of that release; one with a label
    takes only that build (``1.13.0`` matches ``1.13.0+cpu``; ``1.13.0+cpu`` does not match ``1.13.0``)."""

    def release(public: str) -> List[int]:
        numbers = [int(part) for part in public.split(".")]
        while numbers and numbers[-1] == 0:
            numbers.pop()
        return numbers

    pin_public, pin_local = [*pin.lower().split(_LOCAL_SEP, 1), ""][:2]
    public, local = [*version.lower().split(_LOCAL_SEP, 1), ""][:2]
    if pin_local and re.sub(r"[-_]", ".", pin_local) != re.sub(r"[-_]", ".", local):
        return False
    plain = re.compile(r"^\d+(\.\d+)*$")
    if plain.match(pin_public) and plain.match(public):
        return release(pin_public) == release(public)  # 1.13 == 1.13.0
    return pin_public == public


def has_local_label(pin: str) -> bool:
    """``1.13.0+cpu`` -> True: a build the package index cannot carry."""
    return _LOCAL_SEP in pin


def node_tags(python_version: str) -> Dict[str, Set[str]]:
    """The Python and ABI tags a CPython of this version installs (cpXY, abi3 of earlier 3.x, py3 and none)."""
    major, minor = (int(part) for part in python_version.split(".")[:2])
    cp = f"cp{major}{minor}"
    pythons = {cp, f"py{major}", f"py{major}{minor}"} | {f"cp{major}{m}" for m in range(2, minor)}
    return {"pythons": pythons, "abis": {cp, "abi3", "none"}, "cp": {cp}}


def wheel_fits(wheel: WheelName, python_version: str, platforms: Sequence[str]) -> bool:
    """Whether a node with this CPython and these platform tags (empty: any platform) installs the wheel."""
    tags = node_tags(python_version)
    if not wheel.pythons & tags["pythons"] or not wheel.abis & tags["abis"]:
        return False
    # A cpXY ABI needs exactly that interpreter; abi3 an earlier or equal cp3x; none any listed Python tag.
    if wheel.abis & tags["cp"] and not wheel.pythons & tags["cp"] and "abi3" not in wheel.abis:
        return False
    return not platforms or "any" in wheel.platforms or bool(wheel.platforms & set(platforms))


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: List[str] = []

    def handle_starttag(self, tag: str, attrs: List[tuple]) -> None:
        if tag == "a":
            self.hrefs += [value for key, value in attrs if key == "href" and value]


def page_files(html: str) -> List[str]:
    """The file names an HTML page links to (a PEP 503 project page or a find-links page)."""
    parser = _Links()
    parser.feed(html)
    return [unquote(urlsplit(href).path.rsplit("/", 1)[-1]) for href in parser.hrefs]


def project_page(index_url: str, package: str) -> str:
    """The PEP 503 page of a package on an index: ``<index>/<normalised-name>/``."""
    return urljoin(index_url.rstrip("/") + "/", normalize(package) + "/")


def pages_to_read(sources: Mapping[str, Sequence[str]], packages: Iterable[str]) -> List[str]:
    """Every page or folder to read, once: one project page per package per index, each find-links entry once."""
    wanted: List[str] = []
    for index in sources.get("indexes", []):
        wanted += [project_page(index, package) for package in packages]
    wanted += list(sources.get("find_links", []))
    return list(dict.fromkeys(wanted))


def listed_in(files: Iterable[str], package: str, pin: str, python_version: str, platforms: Sequence[str]) -> List[str]:
    """The wheel files of this package and pinned version that fit the node."""
    found = []
    for filename in files:
        wheel = parse_wheel(filename)
        if wheel is None or wheel.name != normalize(package) or not version_matches(pin, wheel.version):
            continue
        if wheel_fits(wheel, python_version, platforms):
            found.append(filename)
    return found


def check(
    pins: Mapping[str, str],
    sources: Mapping[str, Sequence[str]],
    pages: Mapping[str, Optional[List[str]]],
    python_version: str,
    platforms: Sequence[str],
    default_index_unchecked: bool,
) -> Dict[str, List[dict]]:
    """Where each pin is listed, and the pins that no source lists.

    ``sources`` holds the ``indexes`` and ``find_links`` still in use; ``pages`` maps each page of
    pages_to_read to its file names (None: it could not be read). ``default_index_unchecked``: pip's own default
    index is a source too (no index_url, none in pip's configuration) and was not read; a pin that no read source
    lists is left to it, unless it carries a local label (``+cpu``), which the package index never serves.
    Returns ``{'found': [...], 'unchecked': [...], 'missing': [...]}``, each entry a dict with package, version and
    where (the files, or the pages read).
    """
    result: Dict[str, List[dict]] = {"found": [], "unchecked": [], "missing": []}
    for package, pin in sorted(pins.items()):
        where: Dict[str, List[str]] = {}
        looked: List[str] = []
        for index in sources.get("indexes", []):
            page = project_page(index, package)
            looked.append(page)
            where[page] = listed_in(pages.get(page) or [], package, pin, python_version, platforms)
        for page in sources.get("find_links", []):
            looked.append(page)
            where[page] = listed_in(pages.get(page) or [], package, pin, python_version, platforms)
        hits = {page: files for page, files in where.items() if files}
        entry = {"package": package, "version": pin, "looked": looked}
        if hits:
            result["found"].append(dict(entry, where=hits))
        elif default_index_unchecked and not has_local_label(pin):
            result["unchecked"].append(entry)
        else:
            result["missing"].append(entry)
    return result


def pip_config_sources(config_list: str) -> Dict[str, List[str]]:
    """The index-url, extra-index-url and find-links values of ``pip config list`` output (any scope)."""
    found: Dict[str, List[str]] = {"index-url": [], "extra-index-url": [], "find-links": []}
    for line in config_list.splitlines():
        match = re.match(r"^[^.=\s]*\.([a-z-]+)='(.*)'$", line.strip())
        if match and match.group(1) in found:
            found[match.group(1)] += [value for value in match.group(2).split() if value]
    return {key: list(dict.fromkeys(values)) for key, values in found.items()}


def describe_missing(entry: Mapping[str, object], python_version: str, platforms: Sequence[str]) -> str:
    """One missing pin in words: the wheel, the node's tag, where the check looked."""
    major, minor = python_version.split(".")[:2]
    tag = f"cp{major}{minor}" + (f" {platforms[0]}" if platforms else "")
    looked = ", ".join(entry["looked"]) or "no source at all"  # type: ignore[arg-type]
    return f"{entry['package']}=={entry['version']} ({tag}) is listed in none of: {looked}"
