# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A filter that a release shipped stays callable or gets a tombstone in meta/runtime.yml that names what replaces
it, so that a user's play fails with that name instead of core's generic "No filter named"."""

from __future__ import annotations

import os
import subprocess

import pytest
import yaml
from ansible_env import REPO, VENV_BIN, ansible_env
from filter_files import filters_named
from releases import RELEASE_0_1_0_COMMIT, RELEASE_0_1_0_FILTERS


def filter_routing():
    runtime = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())
    return runtime.get("plugin_routing", {}).get("filter", {})


def galaxy_version():
    return yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]


def test_the_frozen_list_is_what_the_release_shipped(tmp_path):
    has_release = subprocess.run(
        ["git", "cat-file", "-e", f"{RELEASE_0_1_0_COMMIT}^{{commit}}"], cwd=REPO, capture_output=True, check=False
    )
    if has_release.returncode != 0:
        pytest.skip(f"this clone has no commit {RELEASE_0_1_0_COMMIT} (release 0.1.0) to compare the list with")
    tree = tmp_path / "ansible_collections" / "amx" / "cluster"
    tree.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", RELEASE_0_1_0_COMMIT, "plugins"], cwd=REPO, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    script = (
        "import pathlib, importlib\n"
        "for p in sorted(pathlib.Path('ansible_collections/amx/cluster/plugins/filter').glob('*.py')):\n"
        "    m = importlib.import_module('ansible_collections.amx.cluster.plugins.filter.' + p.stem)\n"
        "    print('\\n'.join(m.FilterModule().filters()))\n"
    )
    done = subprocess.run(
        [str(VENV_BIN / "python"), "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, PYTHONPATH=str(tmp_path)),
    )
    assert frozenset(done.stdout.split()) == RELEASE_0_1_0_FILTERS


@pytest.mark.parametrize("name", sorted(RELEASE_0_1_0_FILTERS))
def test_a_released_filter_is_there_or_says_what_replaces_it(name):
    current, routing = filters_named(""), filter_routing()
    if name in current:
        assert name not in routing, f"{name} is a filter and a tombstone at once"
        return
    assert name in routing, f"filter {name} was in 0.1.0 and is gone without a tombstone in meta/runtime.yml"
    tombstone = routing[name]["tombstone"]
    assert "amx.cluster." in tombstone["warning_text"], f"{name}'s tombstone must name its replacement (amx.cluster.*)"
    assert str(tombstone["removal_version"]) == galaxy_version(), "a filter removed now is removed in this version"


def test_every_tombstone_is_for_a_released_filter():
    assert set(filter_routing()) <= RELEASE_0_1_0_FILTERS, "a filter never released needs no tombstone"


def test_a_play_that_calls_a_removed_filter_reads_its_replacement(tmp_path):
    routing = filter_routing()
    if not routing:
        pytest.fail("no tombstone to try (at least hf_examples_controller_command was removed since 0.1.0)")
    name = sorted(routing)[0]
    play = tmp_path / "old.yml"
    play.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        f"    - ansible.builtin.debug:\n        msg: \"{{{{ 'x' | amx.cluster.{name} }}}}\"\n"
    )
    done = subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(play)],
        cwd=REPO,
        env=ansible_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0, "a removed filter must fail the play"
    # Older cores print the message as a YAML scalar: wrapped, with a quote doubled.
    said = " ".join((done.stdout + done.stderr).replace("''", "'").split())
    assert " ".join(routing[name]["tombstone"]["warning_text"].split()) in said, said[-2000:]
