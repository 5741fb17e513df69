# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plugin_utils/node_bundle.py: a module_utils function run by a Python that has neither Ansible nor the collection
(this machine's system Python, isolated), from the sources the command sends on standard input."""

from __future__ import annotations

import ast
import pathlib
import subprocess

import pytest
from ad_hoc import NODE_PYTHON

from ansible_collections.amx.cluster.plugins.plugin_utils import node_bundle


def run(folder, name, function, arguments):
    """The bundle of module_utils ``name`` from ``folder``, run here as train_launch runs it on the master."""
    command, stdin = node_bundle.command(NODE_PYTHON, name, function, arguments, str(folder))
    return subprocess.run(command, shell=True, input=stdin, capture_output=True, timeout=60, check=False)


def parsed_names(source):
    """What a source imports from module_utils, as Python's parser reads it."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == node_bundle.PACKAGE:
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(node_bundle.PACKAGE + "."):
            names.add(node.module.rsplit(".", 1)[1])
    return names


@pytest.mark.parametrize("path", sorted(pathlib.Path(node_bundle.MODULE_UTILS).glob("*.py")), ids=lambda p: p.stem)
def test_the_import_pattern_finds_what_the_parser_finds(path):
    source = path.read_text()
    assert set(node_bundle.imported_names(source)) == parsed_names(source)


def test_the_import_pattern_reads_each_form():
    prefix = node_bundle.PACKAGE
    source = (
        f"from {prefix}.alpha import one, two\n"
        f"from {prefix} import beta\n"
        f"from {prefix} import (\n    gamma,\n    delta as d,\n)\n"
        f"def late():\n    from {prefix}.epsilon import three\n"
        "from other.module_utils import zeta\n"
    )
    assert node_bundle.imported_names(source) == ["alpha", "beta", "gamma", "delta", "epsilon"]
    assert set(node_bundle.imported_names(source)) == parsed_names(source)


@pytest.mark.parametrize(
    ("name", "imported"),
    [
        (
            "launch_check",
            {"launch_plan", "node_probe", "smoke_record", "files", "launch", "inputs", "train_agent", "onednn_verbose"},
        ),
        ("node_state", {"node_probe", "cpu_info", "files"}),
    ],
)
def test_a_bundle_holds_what_it_imports_and_nothing_of_ansible(name, imported):
    found = node_bundle.sources(name)
    assert {module.rsplit(".", 1)[1] for module in found} == imported | {name}
    for source in found.values():
        assert "from ansible." not in source and "import ansible\n" not in source


def test_the_check_answers_without_ansible_on_the_node(tmp_path):
    done = run(node_bundle.MODULE_UTILS, "launch_check", "check", {"inputs": "a" * 64, "plan_dir": str(tmp_path)})
    assert done.returncode == 0, done.stderr.decode()
    answer = node_bundle.answer(done.stdout.decode())
    assert answer["ready"] is False and "no full launch" in answer["reason"]
    assert answer["plan_path"] == str(tmp_path / ("a" * 64 + ".json"))


def test_imports_inside_the_bundle_and_output_before_the_answer(tmp_path):
    prefix = node_bundle.PACKAGE
    (tmp_path / "helper.py").write_text("def double(value):\n    return 2 * value\n")
    (tmp_path / "entry.py").write_text(
        f"from {prefix} import helper\n"
        f"from {prefix}.helper import double\n\n"
        "def main(arguments):\n"
        "    print('noise from a library')\n"
        "    return {'doubled': double(arguments['value']), 'same': helper.double is double}\n"
    )
    assert set(node_bundle.sources("entry", str(tmp_path))) == {f"{prefix}.entry", f"{prefix}.helper"}
    done = run(tmp_path, "entry", "main", {"value": 21})
    assert done.returncode == 0, done.stderr.decode()
    assert node_bundle.answer(done.stdout.decode()) == {"doubled": 42, "same": True}


def test_a_function_that_raises_gives_no_answer_and_its_traceback(tmp_path):
    (tmp_path / "entry.py").write_text("def main(arguments):\n    raise RuntimeError('the node says no')\n")
    done = run(tmp_path, "entry", "main", {})
    assert done.returncode == 1
    assert "RuntimeError: the node says no" in done.stderr.decode()
    with pytest.raises(ValueError, match="no answer"):
        node_bundle.answer(done.stdout.decode())
