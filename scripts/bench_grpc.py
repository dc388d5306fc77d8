"""DLRover gRPC latency: 50 job masters calling Brain at once.

In one run against PostgreSQL: `brain serve` with BRAIN_GRPC_PORT on a fresh database
(loopback only), then 50 concurrent clients (one channel each, like 50 masters; spread
over --client-procs processes so that no client thread shares the server's interpreter
or one client interpreter holds all 50), released together, each making --calls calls:
  1. persist_metrics with custom data that changes every call (every call writes);
  2. persist_metrics re-sending the same custom data (the rendezvous poll's pattern);
  2b. persist_metrics in rounds: the 50 clients wait for each other before every call,
     so each round is exactly 50 concurrent calls (changing custom data);
  3. optimize at job_stage_create (each client its own registered job; --history related
     finished jobs in Brain first, so that create sizes from history).
Prints p50 / p99 / max per kind, the server's CPU per call, how many optimize calls got
a plan, and the same persist_metrics load against a gRPC server that does nothing (the
floor this machine and these clients set). Targets: persist_metrics p99 under 50 ms,
optimize p99 under 1 s.

    .venv/bin/python scripts/bench_grpc.py [--pg postgresql://postgres@127.0.0.1:5432]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import grpc
import httpx
from dlrover.proto import brain_pb2, brain_pb2_grpc
from google.protobuf import empty_pb2
from grpc_serve import free_port, fresh_database, grpc_server, wait_idle
from proc_cpu import process_cpu_seconds

CLIENTS = 50


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432", help="server")
    parser.add_argument("--calls", type=int, default=40, help="calls per client and kind")
    parser.add_argument("--client-procs", type=int, default=10, help="client processes")
    parser.add_argument("--history", type=int, default=3, help="related finished jobs")
    args = parser.parse_args()
    with fresh_database(args.pg) as url:
        return run(url, args)


def run(url: str, args: argparse.Namespace) -> int:
    with grpc_server(url) as serving:
        server, addr = serving.process, serving.grpc_addr
        uids = [f"bench-{i:02d}" for i in range(CLIENTS)]
        with httpx.Client(base_url=f"http://127.0.0.1:{serving.http_port}", timeout=60) as rest:
            for i in range(args.history):
                _finished_run(rest, f"past-{i}", days_ago=args.history - i)
            for uid in uids:
                rest.put(f"/api/v1/jobs/{uid}", json=_job(uid)).raise_for_status()
            wait_idle(server.pid)
            load = os.getloadavg()
            print(
                f"{CLIENTS} concurrent clients in {args.client_procs} processes x {args.calls} "
                f"calls each; brain serve on PostgreSQL; {args.history} related finished jobs"
            )
            print(
                f"(machine load average at start: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
                f"on {os.cpu_count()} cores)"
            )
            header = f"{'call':<40} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'server CPU':>16}"
            print(header)
            for label, kind, calls in (
                ("persist_metrics, custom data changing", "changing", args.calls),
                ("persist_metrics, custom data repeated", "repeated", args.calls),
                ("persist_metrics, 50 at once, per round", "burst", args.calls),
                ("optimize job_stage_create", "create", max(args.calls // 4, 1)),
            ):
                result = _measure(addr, uids, kind, calls, args.client_procs, server.pid)
                print(result.line(label))
                if kind == "create":
                    print(f"  optimize answers with a plan: {result.planned} of {result.calls}")
            print("server-side handler time, p99 (upper bucket bound of the histogram):")
            for method in ("persist_metrics", "optimize"):
                print(f"  {method:<40} <= {_server_p99(rest, method) * 1000:.1f} ms")
    floor = _floor(args.calls, args.client_procs)
    print(floor.line("floor: persist_metrics on a no-op server"))
    return 0


@dataclass
class Result:
    latencies: list[float] = field(default_factory=list)
    planned: int = 0
    cpu_s: float = 0.0

    @property
    def calls(self) -> int:
        return len(self.latencies)

    def line(self, label: str) -> str:
        ordered = sorted(self.latencies)
        p50 = ordered[len(ordered) // 2] * 1000
        p99 = ordered[min(int(len(ordered) * 0.99), len(ordered) - 1)] * 1000
        per_call = self.cpu_s / len(ordered) * 1000
        worst = ordered[-1] * 1000
        return f"{label:<40} {p50:7.1f} {p99:7.1f} {worst:7.1f} {per_call:8.2f} ms/call"


def _measure(addr: str, uids: list[str], kind: str, calls: int, procs: int, pid: int) -> Result:
    """Run the clients; the server's CPU counts until it is idle again (queued writes)."""
    before = process_cpu_seconds(pid)
    result = _clients(addr, uids, kind, calls, procs)
    wait_idle(pid)
    result.cpu_s = process_cpu_seconds(pid) - before
    return result


def _clients(addr: str, uids: list[str], kind: str, calls: int, procs: int) -> Result:
    context = multiprocessing.get_context("spawn")
    barrier, answers = context.Barrier(len(uids)), context.Queue()
    workers = [
        context.Process(
            target=_client_process, args=(addr, uids[i::procs], kind, calls, barrier, answers)
        )
        for i in range(procs)
    ]
    for worker in workers:
        worker.start()
    result = Result()
    for _ in workers:
        latencies, planned = answers.get()
        result.latencies.extend(latencies)
        result.planned += planned
    for worker in workers:
        worker.join()
    return result


def _client_process(addr: str, uids: list[str], kind: str, calls: int, barrier, answers) -> None:
    """One client process: a thread and a channel per uid, released with all the others."""
    call = CALLS[kind]

    def client(uid: str) -> tuple[list[float], int]:
        with grpc.insecure_channel(addr) as channel:
            stub = brain_pb2_grpc.BrainStub(channel)
            if kind != "create":
                call(stub, uid, -1)  # connect before the barrier
            else:
                channel_ready = grpc.channel_ready_future(channel)
                channel_ready.result(timeout=30)
            barrier.wait()
            latencies, planned = [], 0
            for i in range(calls):
                if kind == "burst":
                    barrier.wait()  # every round: the 50 calls leave together
                began = time.perf_counter()
                answer = call(stub, uid, i)
                latencies.append(time.perf_counter() - began)
                planned += bool(getattr(answer, "job_optimize_plans", None))
        return latencies, planned

    with ThreadPoolExecutor(len(uids)) as threads:
        parts = list(threads.map(client, uids))
    answers.put(([x for latencies, _ in parts for x in latencies], sum(p for _, p in parts)))


def _metrics(uid: str, data: dict):
    message = brain_pb2.JobMetrics(customized_data=json.dumps(data))
    message.job_meta.uuid = uid
    return message


def _changing(stub, uid: str, i: int):
    return stub.persist_metrics(_metrics(uid, {"rdzv_round": i, "init_training_time": 30}))


def _repeated(stub, uid: str, i: int):
    return stub.persist_metrics(_metrics(uid, {"rdzv_round": 1, "init_training_time": 30}))


def _create(stub, uid: str, i: int):
    request = brain_pb2.OptimizeRequest(type="job_stage_create")
    request.jobs.add().uid = uid
    return stub.optimize(request)


CALLS: dict[str, Callable] = {
    "changing": _changing,
    "repeated": _repeated,
    "burst": _changing,
    "create": _create,
}


def _job(uid: str) -> dict:
    return {
        "name": uid,
        "user": "bench",
        "dataset": "clicks",
        "strategy": "ps",
        "roles": {
            "ps": {"count": 2, "cpu": 8, "memory_mib": 12288},
            "worker": {"count": 4, "cpu": 4, "memory_mib": 8192},
        },
    }


def _finished_run(rest: httpx.Client, uid: str, days_ago: int) -> None:
    """A succeeded run of the same user and dataset: 2 PS and 4 workers, 10 minutes."""
    start = datetime.now(UTC) - timedelta(days=days_ago)
    body = {**_job(uid), "status": "running", "started_at": start.isoformat()}
    rest.put(f"/api/v1/jobs/{uid}", json=body).raise_for_status()
    points = [
        {
            "name": f"{uid}-edljob-{role}-{index}",
            "role": role,
            "index": index,
            "ts": (start + timedelta(minutes=minute)).isoformat(),
            "cpu": cpu,
            "memory_mib": memory,
        }
        for role, count, cpu, memory in (("ps", 2, 3.0, 6000), ("worker", 4, 3.5, 7000))
        for index in range(count)
        for minute in range(10)
    ]
    rest.post(f"/api/v1/jobs/{uid}/samples", json={"nodes": points}).raise_for_status()
    finish = {"status": "succeeded", "finished_at": (start + timedelta(minutes=10)).isoformat()}
    rest.patch(f"/api/v1/jobs/{uid}", json=finish).raise_for_status()


class _NoOp(brain_pb2_grpc.BrainServicer):
    def persist_metrics(self, request, context):
        return empty_pb2.Empty()


def _floor(calls: int, procs: int) -> Result:
    """The same persist_metrics load against a server that answers without doing anything,
    in its own process like brain serve: what the machine and the clients cost alone."""
    port = free_port()
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    server = context.Process(target=_serve_noop, args=(port, ready), daemon=True)
    server.start()
    ready.wait(60)
    try:
        before = process_cpu_seconds(server.pid)
        uids = [f"noop-{i:02d}" for i in range(CLIENTS)]
        result = _clients(f"127.0.0.1:{port}", uids, "changing", calls, procs)
        result.cpu_s = process_cpu_seconds(server.pid) - before
        return result
    finally:
        server.terminate()
        server.join()


def _serve_noop(port: int, ready) -> None:
    server = grpc.server(ThreadPoolExecutor(16))
    brain_pb2_grpc.add_BrainServicer_to_server(_NoOp(), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    ready.set()
    server.wait_for_termination()


def _server_p99(rest: httpx.Client, method: str) -> float:
    """The bound of the first latency bucket holding 99% of the method's calls."""
    prefix = 'brain_grpc_request_duration_seconds_bucket{le="'
    buckets = []
    for line in rest.get("/metrics").text.splitlines():
        if line.startswith(prefix) and f'method="{method}"' in line:
            bound = line.split('le="')[1].split('"')[0]
            buckets.append((float(bound), float(line.rsplit(" ", 1)[1])))
    total = max(count for _, count in buckets)
    return next(bound for bound, count in sorted(buckets) if count >= 0.99 * total)


if __name__ == "__main__":
    sys.exit(main())
