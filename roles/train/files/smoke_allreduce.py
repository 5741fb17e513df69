# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Collective smoke test: one all_reduce over every rank, launched exactly like the training job.

    mpirun -f ~/hosts -n N -ppn M [-genv ...] python3 smoke_allreduce.py --expect_world N --use_cpu --ddp_backend gloo

It takes the job's dialect flags: --ddp_backend / --xpu_backend are aliases of --backend (gloo when none
is given, as for a one-process job); --no_cuda, --use_cpu, --use_ipex and --bf16 are accepted and ignored.

Each rank finds its place the way the transformers Trainer does under mpirun (PMI_RANK / PMI_SIZE,
or the Open MPI, MVAPICH and torchrun variables), joins the process group through MASTER_ADDR /
MASTER_PORT (127.0.0.1:29500 when unset, as on one node), adds rank + 1 over all ranks and prints
one JSON line: rank, world, local_rank, host, backend, result, expected, ok, hosts (every rank's
host name), seconds.

Before that, local rank 0 of each node runs a short bf16 matrix product (a Linear layer under
torch.autocast on the CPU) with oneDNN's verbose output on, and puts oneDNN's lines about it in its
JSON line as ``onednn`` (or the error as ``onednn_error``): the controller reads from them which
kernel did the bf16 matrix work, and so whether AMX ran (module_utils/onednn_verbose.py).

Exit codes: 0 the sum is right; 1 wrong sum; 2 the world size is not --expect_world; 3 the
process group could not start; 124 --timeout seconds passed (a hang: usually MASTER_ADDR, a
firewall between nodes, or the wrong network interface).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import socket
import sys
import tempfile
import threading
import time
from datetime import timedelta
from typing import Any, Dict, Optional, Sequence

RANK_VARS = ("RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK")
SIZE_VARS = ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")
LOCAL_VARS = ("LOCAL_RANK", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK")

STARTED = time.time()
STATE: Dict[str, Any] = {"phase": "start"}


def env_int(names: Sequence[str], default: Optional[int]) -> Optional[int]:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return default


def emit(record: Dict[str, Any]) -> None:
    record["seconds"] = round(time.time() - STARTED, 3)
    # One write per line: the ranks share the launcher's output, and print() writes the text and its newline apart
    # (unbuffered), so two ranks' lines could merge into one.
    sys.stdout.write(json.dumps(record, sort_keys=True) + "\n")
    sys.stdout.flush()


def on_timeout() -> None:
    emit(
        {
            **STATE["identity"],
            "ok": False,
            "error": "timed out during {}".format(STATE["phase"]),
            "hint": "check MASTER_ADDR (the master's private address), that every node reaches it on "
            "MASTER_PORT, and the network interface the backend picks",
        }
    )
    os._exit(124)


def onednn_probe(torch: Any) -> Dict[str, Any]:
    """oneDNN's verbose lines for one bf16 Linear forward, read from this process's own standard output."""
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 1)
        try:
            layer = torch.nn.Linear(256, 256)
            batch = torch.randn(64, 256)
            with contextlib.ExitStack() as scope:
                # torch's switch where it has one; a build without it, or whose switch fails, still reads
                # ONEDNN_VERBOSE / DNNL_VERBOSE, set before torch was imported.
                verbose = getattr(torch.backends.mkldnn, "verbose", None)
                if verbose is not None and hasattr(torch.backends.mkldnn, "VERBOSE_ON"):
                    with contextlib.suppress(RuntimeError):
                        scope.enter_context(verbose(torch.backends.mkldnn.VERBOSE_ON))
                scope.enter_context(torch.autocast("cpu", dtype=torch.bfloat16))
                layer(batch)
        except Exception as error:  # the smoke test's answer does not depend on the probe
            return {"onednn_error": f"{type(error).__name__}: {error}"}
        finally:
            # oneDNN writes through C's stdio: flush its buffer into the file before standard output goes back.
            ctypes.CDLL(None).fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
        captured.seek(0)
        text = captured.read().decode("utf-8", "replace")
    keep = [
        line
        for line in text.splitlines()
        if "_verbose," in line
        and "template:" not in line
        and (",info," in line or "matmul" in line or "inner_product" in line)
    ]
    return {"onednn": keep[:40]}


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="all_reduce smoke test for a distributed CPU job")
    parser.add_argument("--backend", "--ddp_backend", "--xpu_backend", default="gloo", choices=["gloo", "ccl", "mpi"])
    parser.add_argument("--timeout", type=int, default=120, help="hard limit in seconds for the whole test")
    parser.add_argument("--expect_world", type=int, help="fail unless this many ranks take part")
    parser.add_argument("--expect_sum", type=float, help="override the expected sum (tests the failure path)")
    parser.add_argument(
        "--no_onednn_probe", action="store_true", help="skip the bf16 matmul with oneDNN's verbose output"
    )
    # The training job's other dialect flags are accepted and ignored, so the smoke test can be launched
    # with exactly the job's command line, the script swapped.
    for flag in ("--no_cuda", "--use_cpu", "--use_ipex", "--bf16"):
        parser.add_argument(flag, action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(list(argv))


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    rank = env_int(RANK_VARS, 0) or 0
    world = env_int(SIZE_VARS, 1) or 1
    local_rank = env_int(LOCAL_VARS, 0) or 0
    master_addr = os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    master_port = os.environ.setdefault("MASTER_PORT", "29500")
    STATE["identity"] = {
        "rank": rank,
        "world": world,
        "local_rank": local_rank,
        "host": socket.gethostname(),
        "backend": args.backend,
        "master_addr": master_addr,
        "master_port": master_port,
    }
    # A watchdog thread, not SIGALRM: a Python signal handler waits until a blocking C++ call
    # (the rendezvous, a collective) returns, and those release the GIL, so the thread can act.
    watchdog = threading.Timer(max(args.timeout, 1), on_timeout)
    watchdog.daemon = True
    watchdog.start()

    if args.expect_world is not None and world != args.expect_world:
        emit(
            {
                **STATE["identity"],
                "ok": False,
                "error": f"this rank sees a world of {world} processes, expected {args.expect_world}: "
                "check -n/-ppn and the hostfile",
            }
        )
        return 2

    probe = local_rank == 0 and not args.no_onednn_probe
    if probe:
        # Older torch builds have no switch of their own: oneDNN reads these when it starts.
        os.environ.setdefault("ONEDNN_VERBOSE", "1")
        os.environ.setdefault("DNNL_VERBOSE", "1")
    STATE["phase"] = "import torch"
    import torch
    import torch.distributed as dist

    kernels = onednn_probe(torch) if probe else {}

    if args.backend == "ccl":
        STATE["phase"] = "import oneccl_bindings_for_pytorch"
        try:
            import oneccl_bindings_for_pytorch  # noqa: F401
        except ImportError as error:
            emit({**STATE["identity"], "ok": False, "error": f"backend ccl needs oneccl_bindings_for_pytorch: {error}"})
            return 3

    STATE["phase"] = f"init_process_group (rendezvous at {master_addr}:{master_port})"
    try:
        dist.init_process_group(
            backend=args.backend,
            init_method="env://",
            rank=rank,
            world_size=world,
            timeout=timedelta(seconds=max(args.timeout, 1)),
        )
    except Exception as error:  # any failure to start is reported, not raised
        emit({**STATE["identity"], "ok": False, "error": f"init_process_group failed: {error}"})
        return 3

    STATE["phase"] = "all_reduce"
    value = torch.tensor([float(rank + 1)], dtype=torch.float64)
    dist.all_reduce(value, op=dist.ReduceOp.SUM)
    result = float(value.item())
    expected = float(world * (world + 1) // 2) if args.expect_sum is None else float(args.expect_sum)

    STATE["phase"] = "all_gather_object"
    hosts: list = [None] * world
    dist.all_gather_object(hosts, socket.gethostname())
    dist.destroy_process_group()
    watchdog.cancel()

    ok = result == expected
    emit({**STATE["identity"], "result": result, "expected": expected, "ok": ok, "hosts": hosts, **kernels})
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
