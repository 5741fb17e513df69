# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""amx.cluster.node_info run for real: `ansible localhost -m amx.cluster.node_info` with the system's Python."""

from __future__ import annotations

import json
import os
import sys

import pytest
from ad_hoc import NODE_PYTHON, run_module

from ansible_collections.amx.cluster.plugins.module_utils.python_facts import MARKER_KEYS


@pytest.mark.parametrize("check", [False, True])
def test_without_arguments_it_describes_the_python_that_runs_it(check):
    result = run_module("node_info", check=check)
    assert not result.get("failed"), result.get("msg")
    assert result["changed"] is False
    assert os.path.realpath(result["python"]["executable"]) == os.path.realpath(NODE_PYTHON)
    assert tuple(sorted(result["markers"])) == tuple(sorted(MARKER_KEYS))
    assert result["versions"] == {} and result["import_errors"] == {}


def test_it_describes_another_python_and_imports_with_it():
    # This virtualenv's Python, not the module's: it has PyYAML, its prefix is the virtualenv.
    args = {
        "python": sys.executable,
        "imports": [
            {"key": "yaml", "module": "yaml", "package": "PyYAML"},
            {"key": "nothing", "module": "no_such_module_here", "package": "nothing"},
            {"key": "skipped", "module": "json", "package": "skipped"},
        ],
        "packages": ["PyYAML", "nothing"],
    }
    result = run_module("node_info", json.dumps(args))
    assert not result.get("failed"), result.get("msg")
    assert result["python"]["prefix"] == sys.prefix
    assert result["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    import yaml

    assert result["versions"] == {"yaml": yaml.__version__, "nothing": None, "skipped": None}
    assert list(result["import_errors"]) == ["nothing"]


@pytest.mark.parametrize(
    "write_bytecode, check, written", [(True, False, True), (False, False, False), (True, True, False)]
)
def test_write_bytecode_overrides_the_nodes_environment_outside_check_mode(tmp_path, write_bytecode, check, written):
    # The node turns bytecode off for everyone; torch_stack's import check asks for it, so that a job's user who
    # may not write to the venv reads what the venv's owner wrote.
    package = tmp_path / "beacon"
    package.mkdir()
    (package / "__init__.py").write_text('__version__ = "1.0"\n')
    args = {"imports": [{"key": "beacon", "module": "beacon", "package": "beacon"}], "write_bytecode": write_bytecode}
    environment = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(tmp_path)}
    result = run_module("node_info", json.dumps(args), check=check, environment=environment)
    assert not result.get("failed"), result.get("msg")
    assert result["versions"] == {"beacon": "1.0"} and result["changed"] is False
    assert (package / "__pycache__").is_dir() is written


@pytest.mark.parametrize(
    "python, message",
    [
        ("no-such-python-here", "there is no such command on the node's PATH"),
        ("/nonexistent/bin/python3", "no executable file there on the node"),
        ("/bin/false", "cannot run the Python '/bin/false' (exit 1)"),
    ],
)
def test_a_python_that_cannot_run_fails_with_its_name(python, message):
    result = run_module("node_info", json.dumps({"python": python}))
    assert result["failed"] is True
    assert message in result["msg"]
