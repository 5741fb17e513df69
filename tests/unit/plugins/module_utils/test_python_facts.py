# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The probe amx.cluster.node_info runs with a node's Python, and the one list of PEP 508 marker variables."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from ansible_collections.amx.cluster.plugins.module_utils import python_facts as pf

PYENV = pathlib.Path.home() / ".pyenv" / "versions"


def run_probe(python, imports=(), packages=None, env=None):
    argument = pf.imports_argument(list(imports), packages)
    done = subprocess.run(
        [str(python), "-c", pf.probe_source(), argument], capture_output=True, text=True, check=True, env=env
    )
    return pf.parse_report(done.stdout, list(imports))


def pips_own_markers():
    code = "import json; from pip._vendor.packaging import markers; print(json.dumps(markers.default_environment()))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_the_marker_variables_are_the_ones_pip_evaluates():
    assert len(set(pf.MARKER_KEYS)) == len(pf.MARKER_KEYS)
    assert set(pf.MARKER_KEYS) == set(pips_own_markers()) - {"extra"}


def test_the_probe_gives_the_marker_values_pip_itself_would():
    probed = run_probe(sys.executable)
    assert probed["markers"] == {key: value for key, value in pips_own_markers().items() if key in pf.MARKER_KEYS}
    assert probed["python"]["libc"] == "glibc"
    assert probed["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert probed["python"]["prefix"] == sys.prefix
    assert probed["versions"] == {} and probed["import_errors"] == {}


@pytest.mark.parametrize("version", ["3.6", "3.8"])
def test_the_probe_runs_on_old_pythons(version):
    found = sorted(PYENV.glob(f"{version}.*/bin/python"))
    if not found:
        pytest.skip(f"no CPython {version} under {PYENV} (pyenv) on this machine")
    probed = run_probe(found[-1], [{"key": "pip", "module": "pip", "package": "pip"}])
    assert probed["python"]["version"].startswith(version + ".")
    assert probed["markers"]["python_version"] == version
    assert probed["versions"]["pip"] and probed["import_errors"] == {}


def test_imports_report_versions_failures_and_the_ones_left_out(tmp_path):
    # A module that exits while it is imported, as IPEX does on a torch mismatch, and one that prints first.
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(127)\n")
    (tmp_path / "talks.py").write_text("print('hello')\n__version__ = '1.2'\n")
    imports = [
        {"key": "exits", "module": "exits", "package": "exits"},
        {"key": "talks", "module": "talks", "package": "talks"},
        {"key": "absent", "module": "no_such_module_here", "package": "absent"},
        {"key": "left", "module": "json", "package": "left-out"},
    ]
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    probed = run_probe(sys.executable, imports, packages=["exits", "talks", "absent"], env=env)
    assert probed["versions"] == {"exits": None, "talks": "1.2", "absent": None, "left": None}
    assert probed["import_errors"]["exits"] == "SystemExit: 127"
    assert probed["import_errors"]["absent"].startswith("ModuleNotFoundError: ")
    assert set(probed["import_errors"]) == {"exits", "absent"}


def test_an_import_without_version_attribute_takes_the_distributions():
    probed = run_probe(sys.executable, [{"key": "yaml", "module": "yaml", "package": "PyYAML"}])
    import yaml

    assert probed["versions"] == {"yaml": yaml.__version__}


@pytest.mark.parametrize(
    "packages, chosen",
    [(None, ["a", "b"]), (["pa"], ["a"]), ([], [])],
)
def test_imports_argument_selects_by_package(packages, chosen):
    imports = [{"key": "a", "module": "ma", "package": "pa"}, {"key": "b", "module": "mb", "package": "pb"}]
    assert [entry["key"] for entry in json.loads(pf.imports_argument(imports, packages))] == chosen


@pytest.mark.parametrize("entry", [{"key": "a", "module": "m"}, {"key": "a", "module": 1, "package": "p"}])
def test_imports_argument_refuses_an_incomplete_entry(entry):
    with pytest.raises(pf.PythonFactsError, match="key, module and package"):
        pf.imports_argument([entry])


GOOD = {
    "python": {"version": "3.10.12"},
    "markers": {key: "x" for key in pf.MARKER_KEYS},
    "versions": {"torch": "2.7.0"},
    "import_errors": {},
}


def test_parse_report_reads_the_last_line_and_names_every_import():
    text = "noise from an import\n" + json.dumps(GOOD) + "\n\n"
    report = pf.parse_report(text, [{"key": "torch"}, {"key": "ipex"}])
    assert report["versions"] == {"torch": "2.7.0", "ipex": None}
    assert report["markers"] == GOOD["markers"]


@pytest.mark.parametrize(
    "text, error",
    [
        ("", "printed nothing"),
        ("Traceback\n", "not JSON"),
        (json.dumps({"python": {}, "markers": {}}), "lacks one of"),
        (json.dumps(dict(GOOD, markers={"os_name": "posix"})), "lacks the marker values implementation_name"),
        (json.dumps(dict(GOOD, markers=dict(GOOD["markers"], sys_platform=None))), "sys_platform"),
    ],
)
def test_parse_report_refuses_a_bad_answer(text, error):
    with pytest.raises(pf.PythonFactsError, match=error):
        pf.parse_report(text)
