# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The amx.cluster.scaling_report action plugin, run by ansible-playbook on this machine: files, idempotence, PNG."""

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Write the scaling report
      amx.cluster.scaling_report:
        dest: "{{ dest }}"
        title: DistilBERT on SQuAD, r7iz.metal-16xl
        runs: "{{ runs }}"
        prices: "{{ prices | default({}) }}"
      register: scaling

    - name: Keep the result
      ansible.builtin.copy:
        content: "{{ scaling | to_json }}"
        dest: "{{ result_file }}"
        mode: "0644"
      check_mode: false
"""

# The recipe's shape on a measured 1-2-4 node series: 4 nodes at 26 / (4 x 7.5) = 86.7% efficiency.
RUNS = [
    {"nodes": 1, "samples_per_second": 87599 / 1560, "steps": 2738, "epoch_seconds": 1560.0,
     "instance_type": "r7iz.metal-16xl", "label": "squad-1n"},
    {"nodes": 2, "samples_per_second": 106.9, "steps": 1369, "epoch_seconds": [822.0, 817.0],
     "instance_type": "r7iz.metal-16xl", "label": "squad-2n"},
    {"nodes": 4, "samples_per_second": 87599 / 450, "steps": 685, "samples_per_epoch": 87599,
     "instance_type": "r7iz.metal-16xl", "label": "squad-4n"},
]  # fmt: skip

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
needs_playbook = pytest.mark.skipif(not PLAYBOOK.exists(), reason="ansible-playbook is not next to this Python")


def play(tmp_path, dest, runs=None, prices=None, check=False, block_matplotlib=False, fails=False):
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAY)
    result_file = tmp_path / "result.json"
    if result_file.exists():
        result_file.unlink()
    variables = tmp_path / "vars.json"
    extra = {"dest": str(dest), "runs": RUNS if runs is None else runs, "result_file": str(result_file)}
    if prices is not None:
        extra["prices"] = prices
    variables.write_text(json.dumps(extra))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1", COLUMNS="400")
    if block_matplotlib:
        # A matplotlib that cannot be imported, first on the path: the controller without matplotlib.
        shim = tmp_path / "no-matplotlib" / "matplotlib"
        shim.mkdir(parents=True, exist_ok=True)
        (shim / "__init__.py").write_text("raise ImportError('No module named matplotlib (hidden by the test)')\n")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(shim.parent), env.get("PYTHONPATH")]))
    argv = [str(PLAYBOOK), "-i", "localhost,", str(playbook), "-e", f"ansible_python_interpreter={sys.executable}"]
    argv += ["-e", f"@{variables}"]
    if check:
        argv.append("--check")
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    if fails:
        assert done.returncode != 0, done.stdout + done.stderr
        return done.stdout + done.stderr, None
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr, json.loads(result_file.read_text())


def png_size(path):
    """Width and height from the PNG's IHDR chunk (the first chunk, right after the signature)."""
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    assert head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


def snapshot(dest):
    return {path.name: path.read_bytes() for path in sorted(dest.iterdir())}


@needs_playbook
def test_writes_the_report_and_a_second_run_changes_nothing(tmp_path):
    dest = tmp_path / "runs" / "scaling"
    task = play(tmp_path, dest)[1]
    assert task["changed"] is True
    assert task["written"] == ["scaling.json", "scaling.md", "scaling.png"]
    assert task["plotted"] is True
    assert task["msg"].startswith("4 nodes: 3.47x the samples/s of 1, 86.7% efficiency; wrote scaling.json")
    assert sorted(path.name for path in dest.iterdir()) == ["scaling.json", "scaling.md", "scaling.png"]
    assert all(oct(path.stat().st_mode & 0o777) == "0o644" for path in dest.iterdir())

    report = json.loads((dest / "scaling.json").read_text())
    assert report == task["report"]
    rows = {entry["nodes"]: entry for entry in report["runs"]}
    assert rows[4]["efficiency"] == pytest.approx(0.8667, abs=1e-4)
    assert rows[4]["epoch_source"] == "projected"
    assert rows[4]["epoch_seconds"] == pytest.approx(450.0)
    assert rows[2]["epoch_seconds"] == pytest.approx(819.5)  # the mean of its two epochs
    assert rows[2]["cost_per_epoch"] == pytest.approx(2 * 5.952 * 819.5 / 3600, abs=1e-4)
    assert [point["efficiency"] for point in report["reference"]["runs"]] == [1.0, 0.8667]

    markdown = (dest / "scaling.md").read_text()
    assert markdown.startswith("# DistilBERT on SQuAD, r7iz.metal-16xl\n")
    assert "| 4 | squad-4n | r7iz.metal-16xl | 685 | 194.7 | 224.6 | 7 min 30 s (projected) | 6 min 30 s |" in markdown
    assert "| 4 | r7iz.metal-16xl | 7 min 30 s | 6 min 30 s | 3.47x | 86.7% | $2.98 |" in markdown

    # A real PNG of the size the plot is drawn at (11 x 4.6 inches at 100 dpi), with its image data.
    assert png_size(dest / "scaling.png") == (1100, 460)
    assert b"IDAT" in (dest / "scaling.png").read_bytes()
    assert (dest / "scaling.png").stat().st_size > 20_000
    assert b"Software" not in (dest / "scaling.png").read_bytes()

    before = snapshot(dest)
    mtimes = {path.name: path.stat().st_mtime_ns for path in dest.iterdir()}
    again = play(tmp_path, dest)[1]
    assert again["changed"] is False
    assert again["written"] == []
    assert "wrote nothing (up to date)" in again["msg"]
    assert snapshot(dest) == before
    assert {path.name: path.stat().st_mtime_ns for path in dest.iterdir()} == mtimes


@needs_playbook
def test_only_what_differs_is_written_again(tmp_path):
    dest = tmp_path / "scaling"
    play(tmp_path, dest)
    before = snapshot(dest)
    (dest / "scaling.md").write_text("edited by hand\n")
    task = play(tmp_path, dest)[1]
    assert task["changed"] is True
    assert task["written"] == ["scaling.md"]
    assert snapshot(dest) == before

    # Other prices: the costs change, so the JSON and the Markdown; the plot shows no cost and stays.
    task = play(tmp_path, dest, prices={"r7iz.metal-16xl": 4.2})[1]
    assert task["written"] == ["scaling.json", "scaling.md"]
    assert task["report"]["runs"][0]["cost_per_epoch"] == pytest.approx(4.2 * 1560 / 3600, abs=1e-4)
    assert "| r7iz.metal-16xl | 4.2000 |" in (dest / "scaling.md").read_text()

    # Another measurement: everything changes, the plot too.
    runs = [dict(RUNS[0]), dict(RUNS[1], samples_per_second=90.0)]
    task = play(tmp_path, dest, runs=runs, prices={"r7iz.metal-16xl": 4.2})[1]
    assert task["written"] == ["scaling.json", "scaling.md", "scaling.png"]
    assert snapshot(dest)["scaling.png"] != before["scaling.png"]


@needs_playbook
def test_check_mode_writes_nothing(tmp_path):
    dest = tmp_path / "scaling"
    task = play(tmp_path, dest, check=True)[1]
    assert task["changed"] is True
    assert task["written"] == ["scaling.json", "scaling.md", "scaling.png"]
    assert "would write scaling.json, scaling.md, scaling.png" in task["msg"]
    assert not dest.exists()

    play(tmp_path, dest)
    before = snapshot(dest)
    (dest / "scaling.json").write_text("{}\n")
    task = play(tmp_path, dest, check=True)[1]
    assert task["changed"] is True
    assert task["written"] == ["scaling.json"]
    assert (dest / "scaling.json").read_text() == "{}\n"
    assert snapshot(dest)["scaling.png"] == before["scaling.png"]


@needs_playbook
def test_without_matplotlib_it_writes_json_and_markdown_and_warns(tmp_path):
    dest = tmp_path / "scaling"
    out, task = play(tmp_path, dest, block_matplotlib=True)
    assert "pip install matplotlib" in " ".join(out.split())  # older cores wrap a warning
    assert "[WARNING]" in out
    assert task["plotted"] is False
    assert task["written"] == ["scaling.json", "scaling.md"]
    assert sorted(path.name for path in dest.iterdir()) == ["scaling.json", "scaling.md"]
    # Still idempotent without the plot.
    assert play(tmp_path, dest, block_matplotlib=True)[1]["changed"] is False

    # With matplotlib the plot is added; without it again, the plot of the same report is kept...
    assert play(tmp_path, dest)[1]["written"] == ["scaling.png"]
    assert play(tmp_path, dest, block_matplotlib=True)[1]["changed"] is False
    assert (dest / "scaling.png").exists()
    # ...and removed once the report changes, since it would show the old numbers.
    out, task = play(tmp_path, dest, runs=RUNS[:2], block_matplotlib=True)
    assert task["changed"] is True
    assert "removed" in out and "drawn for an earlier report" in out
    assert not (dest / "scaling.png").exists()


@needs_playbook
@pytest.mark.parametrize(
    ("runs", "message"),
    [
        ([dict(RUNS[0]), dict(RUNS[0])], "scaling_report: runs[0] and runs[1] both have nodes=1"),
        ([dict(RUNS[0], samples_per_second=0)], "samples_per_second must be a number greater than 0, got 0.0"),
        ([{"nodes": 1, "steps": 3}], "missing required arguments: samples_per_second"),
        ([], "scaling_report: runs is empty"),
    ],
)
def test_bad_runs_fail_the_task_with_the_reason(tmp_path, runs, message):
    dest = tmp_path / "scaling"
    out = play(tmp_path, dest, runs=runs, fails=True)[0]
    assert message in out
    assert not dest.exists()
