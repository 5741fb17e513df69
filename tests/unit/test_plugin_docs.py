# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every plugin the collection ships renders in ansible-doc, with a description, examples and return values.

The plugins are found from the code, not from a list kept here: every file under plugins/<type>/, and for
filters and tests every name their FilterModule/TestModule returns (one filter per file, documented in the file
or in the sidecar plugins/filter/<name>.yml beside it, as tests/unit/plugins/filter/test_filter_files.py checks).
A plugin added without docs fails this test.
ansible-doc runs once per plugin type, against this checkout (a temporary collections folder links to it).
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PLUGINS = REPO / "plugins"
COLLECTION = "amx.cluster"
ANSIBLE_DOC = Path(sys.executable).parent / "ansible-doc"

# plugins/<folder> -> ansible-doc's plugin type.
DOC_TYPES = {
    "modules": "module",
    "filter": "filter",
    "test": "test",
    "inventory": "inventory",
    "lookup": "lookup",
    "callback": "callback",
    "connection": "connection",
    "become": "become",
    "cache": "cache",
    "vars": "vars",
    "strategy": "strategy",
    "shell": "shell",
    "cliconf": "cliconf",
    "httpapi": "httpapi",
    "netconf": "netconf",
}
# Folders without docs of their own: shared code, and action plugins (documented by the module of the same name).
NO_DOCS = {"module_utils", "plugin_utils", "doc_fragments", "action", "__pycache__"}
# Types whose docs must say what they return.
WITH_RETURN = {"module", "filter", "test", "lookup"}


def python_files(folder: str) -> List[Path]:
    return sorted(path for path in (PLUGINS / folder).glob("*.py") if path.name != "__init__.py")


def jinja_plugins(folder: str) -> Dict[str, Any]:
    """Every filter (or test) the files of plugins/filter (plugins/test) give Jinja: name -> callable."""
    holder, method = ("FilterModule", "filters") if folder == "filter" else ("TestModule", "tests")
    found: Dict[str, Any] = {}
    for path in python_files(folder) if (PLUGINS / folder).is_dir() else []:
        module = importlib.import_module(f"ansible_collections.amx.cluster.plugins.{folder}.{path.stem}")
        found.update(getattr(getattr(module, holder)(), method)())
    return found


def shipped() -> Dict[str, List[str]]:
    """ansible-doc type -> the names of the collection's plugins of that type, from the code."""
    found: Dict[str, List[str]] = {}
    for folder in sorted(path.name for path in PLUGINS.iterdir() if path.is_dir()):
        if folder in NO_DOCS:
            continue
        doc_type = DOC_TYPES[folder]
        if folder in ("filter", "test"):
            names = sorted(jinja_plugins(folder))
        else:
            names = [path.stem for path in python_files(folder)]
        if names:
            found[doc_type] = names
    return found


@pytest.fixture(scope="module")
def ansible_env(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, str]:
    # ansible-doc must read this checkout, whatever .collections links to.
    root = tmp_path_factory.mktemp("collections")
    namespace = root / "ansible_collections" / "amx"
    namespace.mkdir(parents=True)
    (namespace / "cluster").symlink_to(REPO, target_is_directory=True)
    return dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(root),
        ANSIBLE_NOCOLOR="1",
    )


def ansible_doc(env: Dict[str, str], *args: str) -> Any:
    done = subprocess.run(
        [str(ANSIBLE_DOC), *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"ansible-doc {' '.join(args)} failed:\n{done.stderr}"
    return json.loads(done.stdout)


PLUGIN_TYPES = sorted(shipped())


def test_every_plugin_folder_is_known():
    # A folder this test does not know (a new plugin type) must be added to DOC_TYPES or NO_DOCS, not skipped.
    folders = {path.name for path in PLUGINS.iterdir() if path.is_dir()}
    assert folders - set(DOC_TYPES) - NO_DOCS == set()


def test_the_collection_ships_plugins_of_each_kind():
    # The discovery itself works: these kinds exist today, so an empty result would be a broken search.
    found = shipped()
    assert {"module", "filter", "inventory"} <= set(found)
    assert "cluster_shape" in found["filter"]


@pytest.mark.parametrize("doc_type", [doc_type for doc_type in PLUGIN_TYPES if doc_type in ("filter", "test")])
def test_ansible_doc_lists_every_plugin_documented(ansible_env, doc_type):
    # A filter or test without docs is listed as UNDOCUMENTED (other types fail to render, seen below).
    listed = ansible_doc(ansible_env, "-t", doc_type, "-l", COLLECTION, "--json")
    expected = {f"{COLLECTION}.{name}" for name in shipped()[doc_type]}
    assert not expected - set(listed), f"plugins ansible-doc does not find: {sorted(expected - set(listed))}"
    undocumented = sorted(name for name in expected if listed[name] == "UNDOCUMENTED")
    assert not undocumented, f"{doc_type} plugins without docs (UNDOCUMENTED in ansible-doc -l): {undocumented}"


@pytest.mark.parametrize("doc_type", PLUGIN_TYPES)
def test_every_plugin_renders_with_examples(ansible_env, doc_type):
    names = [f"{COLLECTION}.{name}" for name in shipped()[doc_type]]
    docs = ansible_doc(ansible_env, "-t", doc_type, "--json", *names)
    problems = []
    for name in names:
        if name not in docs:
            problems.append(f"{name}: not rendered")
            continue
        entry = docs[name]
        doc = entry.get("doc") or {}
        if not str(doc.get("short_description") or "").strip():
            problems.append(f"{name}: no short_description")
        if not doc.get("description"):
            problems.append(f"{name}: no description")
        if not str(entry.get("examples") or "").strip():
            problems.append(f"{name}: no EXAMPLES")
        if doc_type in WITH_RETURN and not entry.get("return"):
            problems.append(f"{name}: no RETURN")
        if doc_type in ("filter", "test") and "_input" not in (doc.get("options") or {}):
            problems.append(f"{name}: option _input (what goes into the {doc_type}) not documented")
        problems += [f"{name}: {found}" for found in not_text(doc, "DOCUMENTATION")]
        for key, value in (entry.get("return") or {}).items():
            problems += [f"{name}: {found}" for found in not_text(value or {}, f"RETURN.{key}")]
    assert not problems, "\n".join(problems)


def not_text(node: Dict[str, Any], where: str) -> List[str]:
    """Where a description is not text, in a doc, an option or a return value, and below them. A plain YAML scalar
    with ": " inside (C({below: X})) becomes a mapping: ansible-doc --json passes it on, its text output fails."""
    found = []
    description = node.get("description")
    lines = description if isinstance(description, list) else [description]
    if description is not None and not all(isinstance(line, str) for line in lines):
        found.append(f"{where}: a description that is not text: {description!r}")
    for key in ("options", "suboptions", "contains"):
        for name, value in (node.get(key) or {}).items():
            found += not_text(value or {}, f"{where}.{name}")
    return found


def named_parameters(func: Any) -> Optional[List[inspect.Parameter]]:
    """The parameters after the input, or None when the callable hides them behind *args (a plain wrapper)."""
    parameters = list(inspect.signature(func).parameters.values())
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters):
        return None
    return parameters[1:]


SIGNED = [
    (folder, name)
    for folder in ("filter", "test")
    for name, func in sorted(jinja_plugins(folder).items())
    if named_parameters(func) is not None
]


@pytest.mark.parametrize(("folder", "name"), SIGNED, ids=[f"{folder}-{name}" for folder, name in SIGNED])
def test_documented_options_are_the_parameters(folder, name):
    # Where the signature can be read (a plain function, or a wrapper that sets __wrapped__), the sidecar or
    # DOCUMENTATION names its parameters, in order for the positional ones, with their defaults.
    func = jinja_plugins(folder)[name]
    parameters = named_parameters(func)
    sidecar = PLUGINS / folder / f"{name}.yml"
    if sidecar.exists():
        doc = yaml.safe_load(sidecar.read_text())["DOCUMENTATION"]
    else:
        doc = yaml.safe_load(importlib.import_module(func.__module__).DOCUMENTATION)
    options = doc.get("options") or {}
    assert sorted(set(options) - {"_input"}) == sorted(p.name for p in parameters)
    for parameter in parameters:
        option = options[parameter.name]
        required = parameter.default is inspect.Parameter.empty
        assert bool(option.get("required")) == required, parameter.name
        if not required:
            assert option.get("default") == parameter.default, parameter.name
    positional = [word.strip() for word in str(doc.get("positional") or "").split(",") if word.strip()]
    assert positional == [p.name for p in parameters][: len(positional)]


def action_plugins() -> List[str]:
    return [path.stem for path in python_files("action")] if (PLUGINS / "action").is_dir() else []


def option_differences(spec: Dict[str, Any], documented: Dict[str, Any], prefix: str = "") -> List[str]:
    """How an argument spec and documented options disagree (names, type, default, required, choices)."""
    found = []
    for key in sorted(set(spec) | set(documented)):
        if key not in documented:
            found.append(f"{prefix}{key}: in the argument spec, not documented")
            continue
        if key not in spec:
            found.append(f"{prefix}{key}: documented, not in the argument spec")
            continue
        want, doc = spec[key], documented[key]
        pairs = {
            "type": (want.get("type", "str"), doc.get("type", "str")),
            "elements": (want.get("elements"), doc.get("elements")),
            "default": (want.get("default"), doc.get("default")),
            "required": (bool(want.get("required")), bool(doc.get("required"))),
            "choices": (want.get("choices"), doc.get("choices")),
        }
        found += [
            f"{prefix}{key}: {attr} {a!r} in the spec, {b!r} documented" for attr, (a, b) in pairs.items() if a != b
        ]
        if want.get("options") or doc.get("suboptions"):
            found += option_differences(want.get("options") or {}, doc.get("suboptions") or {}, f"{prefix}{key}.")
    return found


@pytest.mark.parametrize("name", action_plugins())
def test_action_plugin_is_documented_by_its_module(name):
    # ansible-doc shows an action plugin's options from the module of the same name: it must exist and match.
    module_file = PLUGINS / "modules" / f"{name}.py"
    assert module_file.exists(), f"plugins/action/{name}.py has no plugins/modules/{name}.py to document it"
    module = importlib.import_module(f"ansible_collections.amx.cluster.plugins.modules.{name}")
    action = importlib.import_module(f"ansible_collections.amx.cluster.plugins.action.{name}")
    spec = getattr(action, "ARGUMENT_SPEC", None)
    if spec is None:
        pytest.skip(f"plugins/action/{name}.py keeps no ARGUMENT_SPEC to compare with")
    assert option_differences(spec, documented_options(module.DOCUMENTATION)) == []


def documented_options(documentation: str) -> dict:
    """A module's options with those of the collection's doc fragments it extends, as ansible-doc shows them."""
    doc = yaml.safe_load(documentation)
    options = {}
    for fragment in doc.get("extends_documentation_fragment") or []:
        if fragment.startswith("amx.cluster."):
            shared = importlib.import_module(f"ansible_collections.amx.cluster.plugins.doc_fragments.{fragment[12:]}")
            options.update(yaml.safe_load(shared.ModuleDocFragment.DOCUMENTATION).get("options") or {})
    return {**options, **(doc.get("options") or {})}


def test_option_differences_sees_a_mismatch():
    # The comparison above can fail: a renamed option, a changed default and a missing suboption all show.
    spec = {"a": {"type": "int", "default": 1}, "b": {"type": "list", "options": {"c": {"required": True}}}}
    documented = {"a": {"type": "int", "default": 2}, "b": {"type": "list", "suboptions": {}}, "z": {}}
    assert option_differences(spec, documented) == [
        "a: default 1 in the spec, 2 documented",
        "b.c: in the argument spec, not documented",
        "z: documented, not in the argument spec",
    ]
