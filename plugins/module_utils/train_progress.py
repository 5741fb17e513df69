# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Progress lines and failure reports of a training run, for the amx.cluster.train_job action plugin.

Pure functions over what the run leaves on the master: the progress file (JSON lines written by the
training script: step, total_steps, epoch, loss, samples_per_second, eta_seconds, rank), the
launcher's output (``mpirun -prepend-rank``: every chunk a rank writes is prefixed ``[rank] ``) and
the rank table the run's agent keeps (which pid is which rank on which node, and when each ended).
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.amx.cluster.plugins.module_utils.train_agent import MARKER, split_ranks

__all__ = ["analyse_failure", "failure_message", "format_duration", "format_progress", "split_ranks"]

ERROR = re.compile(
    r"Traceback \(most recent call last\)|Fatal Python error|^\w*(Error|Exception)\b|Segmentation fault|"
    r"core dumped|Killed|Aborted|terminate called|RuntimeError|exited with|SystemExit"
)
# The Trainer's own log, for scripts without a progress file: tqdm's "  12/300 [00:05<02:10, 2.2it/s]" and
# the logged dict "{'loss': 1.23, ..., 'epoch': 0.4}" (transformers 4.x prints floats, 5.x strings).
TQDM = re.compile(r"(\d+)/(\d+) \[([\d:]+)<([\d:?]+)(?:,\s*([\d.]+)\s*(it/s|s/it))?")
LOSS = re.compile(r"['\"]loss['\"]:\s*['\"]?([-+\d.eE]+)")
EPOCH = re.compile(r"['\"]epoch['\"]:\s*['\"]?([-+\d.eE]+)")
BANNER_STRING = re.compile(r"EXIT STRING: (.+)$")
REPORT = re.compile(
    r"amx\.cluster: rank (\d+) ended: (exit code -?\d+|signal (\d+)(?: \(\w*\??\))?), pid (\d+) on (\S+)"
)
PROGRESS_BAR = re.compile(r"\d+%\|")
EXCEPTION = re.compile(r"^\s*[\w.]*(Error|Exception|Interrupt|Exit)\b")


def format_duration(seconds: Any) -> str:
    """``75`` -> ``0:01:15``; ``None`` -> ``?``."""
    try:
        total = round(float(seconds))
    except (TypeError, ValueError):
        return "?"
    total = max(total, 0)
    return f"{total // 3600}:{total % 3600 // 60:02d}:{total % 60:02d}"


def parse_progress(text: str) -> List[Dict[str, Any]]:
    """The records of a progress file (JSON lines); lines that are not a JSON object are skipped."""
    records = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "step" in record:
            records.append(record)
    return records


def _number(value: Any, digits: int) -> Optional[str]:
    try:
        return f"{float(value):.{digits}f}"
    except (TypeError, ValueError):
        return None


def format_progress(record: Mapping[str, Any]) -> str:
    """``step 40/120 (33%) | epoch 0.33 | loss 4.9123 | 41.2 samples/s | ETA 0:01:12``."""
    step, total = record.get("step"), record.get("total_steps")
    parts = []
    if total:
        try:
            parts.append(f"step {int(step)}/{int(total)} ({100 * int(step) // max(int(total), 1)}%)")
        except (TypeError, ValueError):
            parts.append(f"step {step}/{total}")
    else:
        parts.append(f"step {step}")
    epoch = _number(record.get("epoch"), 2)
    if epoch is not None:
        parts.append(f"epoch {epoch}")
    loss = _number(record.get("loss"), 4)
    if loss is not None:
        parts.append(f"loss {loss}")
    rate = _number(record.get("samples_per_second"), 1)
    if rate is not None:
        parts.append(f"{rate} samples/s")
    elif record.get("rate"):
        parts.append(str(record["rate"]))
    if record.get("eta_seconds") is not None:
        parts.append(f"ETA {format_duration(record['eta_seconds'])}")
    return " | ".join(parts)


def _clock(text: str) -> Optional[int]:
    try:
        seconds = 0
        for part in text.split(":"):
            seconds = seconds * 60 + int(part)
        return seconds
    except ValueError:
        return None


def parse_log_progress(text: str, previous: Optional[Mapping[str, Any]] = None) -> Optional[Dict[str, Any]]:
    """The latest progress a Trainer's console output shows (tqdm bar and logged loss), or ``previous``.

    For scripts that write no progress file (transformers' run_qa.py): good enough to show the run moving.
    """
    record: Dict[str, Any] = dict(previous or {})
    found = False
    for line in re.split(r"[\r\n]", text):
        shown = TQDM.search(line)
        if shown:
            record["step"], record["total_steps"] = int(shown.group(1)), int(shown.group(2))
            eta = _clock(shown.group(4))
            if eta is not None:
                record["eta_seconds"] = eta
            if shown.group(5):
                record["rate"] = f"{shown.group(5)} {shown.group(6)}"
            found = True
        loss = LOSS.search(line)
        if loss:
            record["loss"] = float(loss.group(1))
            epoch = EPOCH.search(line)
            if epoch:
                record["epoch"] = float(epoch.group(1))
            found = True
    if not found:
        return dict(previous) if previous else None
    record.setdefault("step", "?")
    return record


def first_error_line(lines: Sequence[str]) -> Optional[int]:
    for index, line in enumerate(lines):
        if ERROR.search(line):
            return index
    return None


def error_order(text: str) -> List[int]:
    """Ranks in the order their first error line appears in the combined output."""
    order: List[int] = []
    for raw in text.replace("\r\n", "\n").split("\n"):
        pieces = MARKER.split(raw)
        for i in range(1, len(pieces) - 1, 2):
            rank = int(pieces[i])
            if rank not in order and ERROR.search(pieces[i + 1]):
                order.append(rank)
    return order


def host_label(alias: Optional[str], hosts: Mapping[str, str]) -> str:
    """``node1`` -> ``worker-b (node1)``; the master's ``localhost`` -> its inventory name."""
    if alias is None:
        return "?"
    name = hosts.get(alias)
    if name is None:
        return str(alias)
    return name if alias == "localhost" or name == alias else f"{name} ({alias})"


def rank_reports(text: str) -> List[Dict[str, Any]]:
    """The ``amx.cluster: rank R ended: HOW, pid P on HOST`` lines of rank_exec.sh, in the order they came."""
    found = []
    for raw in text.replace("\r", "\n").split("\n"):
        match = REPORT.search(raw)
        if match:
            found.append(
                {
                    "rank": int(match.group(1)),
                    "how": match.group(2),
                    "signal": int(match.group(3)) if match.group(3) else None,
                    "pid": int(match.group(4)),
                    "hostname": match.group(5),
                }
            )
    return found


def analyse_failure(
    log_text: str,
    rank_hosts: Optional[Mapping[Any, str]] = None,
    hosts: Optional[Mapping[str, str]] = None,
) -> Dict[str, Any]:
    """Name the rank that brought a failed run down, and how.

    ``rank_hosts``: rank -> host alias from the layout (ranks fill the hostfile in order, processes per node
    at a time). ``hosts``: alias -> inventory name.

    Evidence, strongest first: the first report of rank_exec.sh (it wraps every rank and reports a rank that
    ends badly before the launcher ends the others); else the rank whose error message came first in the
    output; else none (``rank`` is None: the launcher itself failed, or nothing was said).
    """
    hosts = dict(hosts or {})
    rank_hosts = {int(k): v for k, v in (rank_hosts or {}).items()}
    per_rank = split_ranks(log_text)
    reports = rank_reports(log_text)
    errors = error_order(log_text)
    culprit: Optional[int] = None
    pid: Optional[int] = None
    evidence = ""
    report: Optional[Dict[str, Any]] = None
    if reports:
        report = reports[0]
        culprit, pid = report["rank"], report["pid"]
        evidence = f"the first rank to end badly, pid {pid} on {report['hostname']}"
    elif errors:
        culprit = errors[0]
        evidence = "its error message came first"
    alias = rank_hosts.get(culprit) if culprit is not None else None
    lines = (
        [line for line in per_rank.get(f"rank-{culprit}", []) if not REPORT.search(line)] if culprit is not None else []
    )
    banner = None
    for line in per_rank.get("launcher", []):
        match = BANNER_STRING.search(line)
        if match:
            banner = match.group(1).strip()
    if culprit is not None:
        error_at = first_error_line(lines)
        exceptions = [line for line in lines[error_at:] if EXCEPTION.match(line)] if error_at is not None else []
        if exceptions:
            how = "failed with " + exceptions[-1].strip()
        elif error_at is not None:
            how = "failed with " + lines[error_at].strip()
        elif report and report["signal"]:
            how = "was killed by {} (the OOM killer, kill, a lost node) without an error message".format(report["how"])
        elif report:
            how = "ended with {} without an error message".format(report["how"])
        else:
            how = "failed"
        if report and (exceptions or error_at is not None):
            how += f" ({report['how']})"
    else:
        how = "no rank reported an error" + (f"; mpirun: {banner}" if banner else "")
    return {
        "rank": culprit,
        "alias": alias,
        "host": host_label(alias, hosts) if alias else (report["hostname"] if report else None),
        "pid": pid,
        "evidence": evidence,
        "how": how,
        "lines": lines[-12:],
        "reports": reports,
        "error_ranks": errors,
        "launcher_lines": per_rank.get("launcher", [])[-12:],
    }


def failure_message(
    name: str,
    master: str,
    result: Mapping[str, Any],
    analysis: Mapping[str, Any],
    run_dir: str,
    last_progress: Optional[Mapping[str, Any]] = None,
    hint: str = "",
) -> str:
    """One message a person can act on: what failed, where, how, where the logs are, what to check."""
    duration = format_duration(result.get("duration"))
    if result.get("timed_out"):
        head = f"{name} on {master} did not finish within {format_duration(result.get('timeout'))}: stopped it"
    elif result.get("error"):
        head = f"{name} on {master} could not be supervised: {result['error']}"
    else:
        code = result.get("rc")
        code_text = f"signal {result['signal']}" if result.get("signal") else f"exit code {code}"
        head = f"{name} on {master} failed after {duration} (launcher {code_text})"
    parts = [head]
    if analysis.get("rank") is not None:
        parts.append(
            "rank {} on {} {}{}".format(
                analysis["rank"],
                analysis.get("host") or "?",
                analysis.get("how", ""),
                f" ({analysis['evidence']})" if analysis.get("evidence") else "",
            )
        )
    elif analysis.get("how"):
        parts.append(str(analysis["how"]))
    if last_progress:
        parts.append("last progress: " + format_progress(last_progress))
    shown = [line for line in analysis.get("lines") or [] if not PROGRESS_BAR.search(line)]
    if shown:
        parts.append("last lines of rank {}: {}".format(analysis["rank"], " / ".join(shown[-4:])))
    elif analysis.get("launcher_lines"):
        parts.append("last lines of the launcher: " + " / ".join(analysis["launcher_lines"][-6:]))
    parts.append(f"logs: {master}:{run_dir}/logs/ and {run_dir}/state/")
    if hint:
        parts.append(hint)
    return ". ".join(part.rstrip(". ") for part in parts) + "."


def left_running(sweeps: Mapping[str, Any], hosts: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """Processes of the run still alive after the sweep, per node (empty when every node is clean)."""
    left: Dict[str, Any] = {}
    for alias, answer in (sweeps or {}).items():
        label = host_label(alias, hosts or {})
        if not isinstance(answer, dict):
            left[label] = "no answer"
        elif answer.get("error"):
            left[label] = answer["error"]
        elif answer.get("left"):
            left[label] = [item.get("pid") for item in answer["left"]]
    return left
