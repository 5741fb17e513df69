# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The status of a cluster (playbooks/status.yml): every node with its state, type, uptime, idle time and when its
autostop acts, the job running with its progress, and what the nodes cost, from what each node and the inventory
said. Pure: the module amx.cluster.cluster_status gathers nothing itself.

Cost: the on-demand price of the instance type (module_utils/scaling.py's table, the one the scaling report's cost
per epoch uses, with the user's overrides) times the hours since the instance's last start (EC2's LaunchTime, which
a start renews), or the node's uptime where there is no LaunchTime. It is a list price, not a bill.
"""

from __future__ import annotations

import datetime
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.amx.cluster.plugins.module_utils.train_progress import format_duration


def _epoch(iso: Any) -> Optional[float]:
    """``2026-12-04T15:00:00.000000Z`` (the inventory's ec2_launch_time) -> epoch seconds; None when not a time."""
    if not isinstance(iso, str) or not iso:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed.timestamp()


def _iso(epoch: Optional[float]) -> Optional[str]:
    if epoch is None:
        return None
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def node_row(node: Mapping[str, Any], prices: Mapping[str, float], now: float) -> Dict[str, Any]:
    """One node's line of the status. ``node``: name, state (the EC2 state; '' outside EC2), instance_type,
    launch_time (ISO, EC2's), asked (the node was asked), reached (it answered), autostop (the result of
    amx.cluster.autostop's status)."""
    report = node.get("autostop") if isinstance(node.get("autostop"), Mapping) else {}
    reached = bool(node.get("reached"))
    state = node.get("state") or ("running" if reached else "unknown")
    running = state == "running"
    launched = _epoch(node.get("launch_time"))
    uptime = _number(report.get("uptime_seconds")) if reached else None
    if running and launched is not None:
        up_seconds: Optional[float] = max(0.0, now - launched)
    else:
        up_seconds = uptime if running else None
    decision = report.get("now") if isinstance(report.get("now"), Mapping) else None
    settings = report.get("settings") if isinstance(report.get("settings"), Mapping) else None
    idle = _number(decision.get("idle_seconds")) if decision else None
    autostop_at = _number(decision.get("shutdown_due_wall")) if decision and running else None
    lifetime_at = _number(report.get("lifetime_deadline_wall")) if running else None
    acts = [(at, why) for at, why in ((autostop_at, "idle"), (lifetime_at, "maximum lifetime")) if at is not None]
    first = min(acts) if acts else None
    price = prices.get(str(node.get("instance_type") or ""))
    return {
        "name": node.get("name"),
        "instance_id": node.get("instance_id") or None,
        "state": state,
        "instance_type": node.get("instance_type") or None,
        "reached": reached,
        "asked": bool(node.get("asked", reached)),
        "uptime_seconds": up_seconds,
        "uptime": format_duration(up_seconds) if up_seconds is not None else None,
        "idle_minutes": round(idle / 60, 1) if idle is not None else None,
        "busy": list(report.get("busy") or []) if reached else [],
        "autostop": (
            {"idle_minutes": settings.get("idle_minutes"), "action": settings.get("action")} if settings else None
        ),
        "timer_active": report.get("timer_active"),
        "acts_at": _iso(first[0]) if first else None,
        "acts_because": first[1] if first else None,
        "acts_in_minutes": round(max(0.0, first[0] - now) / 60, 1) if first else None,
        "price_per_hour": price if running else None,
        "cost_so_far": round(price * up_seconds / 3600, 2) if price is not None and up_seconds is not None else None,
        "jobs": list(report.get("jobs") or []) if reached else [],
    }


def cluster_status(
    nodes: Sequence[Mapping[str, Any]], prices: Mapping[str, float], now: float, cluster_name: str = ""
) -> Dict[str, Any]:
    """The whole status: the node rows, the job, the cost, and the lines a person reads."""
    rows = [node_row(node, prices, now) for node in nodes]
    jobs = [dict(job, node=row["name"]) for row in rows for job in row["jobs"] if job.get("progress")]
    jobs += [dict(job, node=row["name"]) for row in rows for job in row["jobs"] if not job.get("progress")]
    job = jobs[0] if jobs else None
    priced = [row for row in rows if row["price_per_hour"] is not None]
    unpriced = [row["name"] for row in rows if row["state"] == "running" and row["price_per_hour"] is None]
    hourly = round(sum(row["price_per_hour"] for row in priced), 4) if priced else None
    spent = round(sum(row["cost_so_far"] or 0 for row in priced), 2) if priced else None
    return {
        "cluster_name": cluster_name or None,
        "time": _iso(now),
        "nodes": rows,
        "job": job,
        "cost": {"per_hour": hourly, "so_far": spent, "unpriced_nodes": unpriced, "currency": "USD"},
        "lines": status_lines(rows, job, hourly, spent, unpriced),
    }


def status_lines(
    rows: Sequence[Mapping[str, Any]],
    job: Optional[Mapping[str, Any]],
    hourly: Optional[float],
    spent: Optional[float],
    unpriced: List[str],
) -> List[str]:
    lines = []
    for row in rows:
        parts = [str(row["name"]), row["state"]]
        if row["instance_type"]:
            parts.append(row["instance_type"])
        if row["instance_id"]:
            parts.append(row["instance_id"])
        if row["uptime"]:
            parts.append(f"up {row['uptime']}")
        if row["state"] == "running" and not row["reached"]:
            parts.append("no answer over SSH" if row["asked"] else "not asked")
        if row["busy"]:
            parts.append("busy: " + ", ".join(row["busy"]))
        elif row["idle_minutes"] is not None:
            parts.append(f"idle {row['idle_minutes']} min")
        if row["acts_at"]:
            action = (row["autostop"] or {}).get("action") if row["acts_because"] == "idle" else "power off"
            parts.append(
                f"{action or 'shutdown'} at {row['acts_at']} ({row['acts_because']}, in {row['acts_in_minutes']} min)"
            )
        elif row["reached"] and row["autostop"] is None:
            parts.append("no autostop")
        if row["price_per_hour"] is not None:
            parts.append(f"${row['price_per_hour']}/h, ${row['cost_so_far']} so far")
        lines.append(" | ".join(parts))
    if job:
        progress = (job.get("progress") or {}).get("line") or "no progress line yet"
        lines.append(f"job {job['job']} on {job['node']}: {progress}")
    else:
        lines.append("no training job running")
    if hourly is not None:
        lines.append(f"cost: ${hourly}/h for the running nodes, ${spent} since their last start (on-demand list price)")
    if unpriced:
        lines.append(f"no price for the instance type of: {', '.join(unpriced)}")
    return lines
