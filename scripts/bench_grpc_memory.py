"""Memory of a `brain serve` worker under large DLRover reports: 1,000 distinct 4 MB
persist_metrics reports, then the worker's resident memory against its baseline.

Starts `brain serve --workers 1` with BRAIN_GRPC_PORT on a fresh PostgreSQL database
(loopback only), reads the resident memory (VmRSS, /proc) of every process of the
server, sends --reports distinct customized_data reports of --bytes each (one client,
one call at a time; bounded by --max-seconds), waits until the server is idle, and
reads the memory again. Prints both, the growth, and the machine's load. Target: a
worker within 200 MiB of its baseline.

    .venv/bin/python scripts/bench_grpc_memory.py [--pg postgresql://postgres@127.0.0.1:5432]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import grpc
from dlrover.proto import brain_pb2, brain_pb2_grpc
from grpc_serve import fresh_database, grpc_server, wait_idle

MIB = 1024 * 1024
# gRPC's default largest message is 4 MiB: a 4,000,000-byte report and its envelope fit.
DEFAULT_BYTES = 4_000_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432", help="server")
    parser.add_argument("--reports", type=int, default=1000, help="distinct reports sent")
    parser.add_argument("--bytes", type=int, default=DEFAULT_BYTES, help="size of each")
    parser.add_argument("--jobs", type=int, default=50, help="job uids they are spread over")
    parser.add_argument("--max-seconds", type=float, default=600, help="stop sending after")
    args = parser.parse_args()
    with fresh_database(args.pg) as url:
        return run(url, args)


def run(url: str, args: argparse.Namespace) -> int:
    with grpc_server(url, log_level="error") as serving:
        server = serving.process
        wait_idle(server.pid)
        before = _rss_mib(server.pid)
        load = os.getloadavg()
        started = time.monotonic()
        sent = 0
        with grpc.insecure_channel(serving.grpc_addr) as channel:
            stub = brain_pb2_grpc.BrainStub(channel)
            for i in range(args.reports):
                if time.monotonic() - started > args.max_seconds:
                    break
                # Distinct payloads: each differs in its key, so no dedupe hit.
                value = "x" * (args.bytes - 32)
                data = json.dumps({f"k{i:08d}": value})
                metrics = brain_pb2.JobMetrics(customized_data=data)
                metrics.job_meta.uuid = f"mem-{i % args.jobs}"
                stub.persist_metrics(metrics, timeout=60)
                sent += 1
        seconds = time.monotonic() - started
        wait_idle(server.pid)
        after = _rss_mib(server.pid)
    print(
        f"{sent} distinct reports of {args.bytes} bytes over {args.jobs} jobs in {seconds:.0f} s; "
        f"machine load average at start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
        f"on {os.cpu_count()} cores"
    )
    for pid in before:
        grown = after.get(pid, 0.0) - before[pid]
        print(
            f"  pid {pid}: {before[pid]:.0f} MiB before, {after.get(pid, 0.0):.0f} MiB after "
            f"({grown:+.0f} MiB)"
        )
    worst = max(after.get(pid, 0.0) - before[pid] for pid in before)
    print(f"largest growth of one process: {worst:+.0f} MiB (target: within 200 MiB)")
    return 0 if worst <= 200 else 1


def _rss_mib(pid: int) -> dict[int, float]:
    """Resident memory of the process and its children, MiB by pid (Linux /proc)."""
    pids = [pid, *_children(pid)]
    found = {}
    for each in pids:
        try:
            with open(f"/proc/{each}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        found[each] = int(line.split()[1]) * 1024 / MIB
        except FileNotFoundError:
            continue
    return found


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as children:
            direct = [int(p) for p in children.read().split()]
    except FileNotFoundError:
        return []
    return [p for child in direct for p in (child, *_children(child))]


if __name__ == "__main__":
    sys.exit(main())
