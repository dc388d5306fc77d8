"""Benchmark discovery and backfill at cluster scale against a real Prometheus.

The synthetic fleet of the tests (tests/collectors/fleet.py) at scale: ``--pods``
training pods (jobs of ``--pods-per-job``: one PS, the rest workers, each job running
``--job-hours``) spread over ``--days``, scraped every 60 s, plus ``--live-pods`` pods of
jobs running from an hour before the fleet was built to three hours after it. Its
OpenMetrics is written in one file per two hours of samples (``promtool tsdb
create-blocks-from openmetrics`` reads its whole input once per two-hour block it makes,
so one file of 14 days is read 169 times; a file of two hours once), each turned into its
block and deleted. The blocks are kept under ``--cache`` keyed by the parameters and reused
while the live pods still run (three hours), served by Debian's ``prometheus`` without
compaction. Then, on a fresh PostgreSQL database:

1. ``brain collect --backfill``: from the fleet's first day to now (the days asked, plus
   the time since the blocks were built): wall time and Brain's peak RSS (targets: 10
   min, 600 MiB for 14 days x 2,000 pods on two cores);
2. ``brain collect --once``: one live cycle over the running pods (target: 10 s), twice:
   the second sees the same jobs again, as every cycle after the first does.

Figures mean little on a busy machine: say under what load they were taken.

    .venv/bin/python scripts/bench_discovery.py                       # the full size
    .venv/bin/python scripts/bench_discovery.py --pods 200 --days 2 --live-pods 200
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from brain.db import migrate  # noqa: E402
from tests.collectors.fleet import Fleet, FleetPod  # noqa: E402

H = 3600
BLOCK_S = 2 * H  # promtool's block length
LIVE_AHEAD_S = 3 * H  # how long after the build the live pods still run
MEASURE = (
    "import resource, sys\n"
    "from api.main import main\n"
    "code = main(sys.argv[1:])\n"
    "use = resource.getrusage(resource.RUSAGE_SELF)\n"
    "print(f'max_rss_mib {use.ru_maxrss / 1024:.0f}, cpu {use.ru_utime + use.ru_stime:.1f} s',"
    " file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--pods", type=int, default=2000, help="training pods over the span (2,000)")
    p.add_argument("--days", type=int, default=14, help="span of history, days (14)")
    p.add_argument("--pods-per-job", type=int, default=10, help="pods per job (10)")
    p.add_argument("--job-hours", type=float, default=6, help="how long each job runs (6)")
    p.add_argument("--live-pods", type=int, default=2000, help="pods running now (2,000)")
    p.add_argument(
        "--cache",
        default="/tmp/brain-bench-discovery",
        help="where the TSDB blocks are kept, one folder per set of parameters",
    )
    p.add_argument("--build-only", action="store_true", help="build the blocks, measure nothing")
    p.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432", help="PostgreSQL")
    return p.parse_args()


def fleet(args, built_at: int) -> Fleet:
    end = built_at // 60 * 60
    start = end - args.days * 86400
    pods: list[FleetPod] = []
    jobs = max(1, args.pods // args.pods_per_job)
    duration = int(args.job_hours * H)
    spacing = max(60, (args.days * 86400 - duration) // jobs)
    for n in range(jobs):
        begin = start + n * spacing
        pods += job_pods(
            f"train-{n:05d}", f"team-{n % 20:02d}", begin, begin + duration, "Succeeded", args
        )
    live_jobs = max(0, args.live_pods // args.pods_per_job)
    for n in range(live_jobs):
        pods += job_pods(
            f"live-{n:05d}", f"team-{n % 20:02d}", end - H, end + LIVE_AHEAD_S, "Running", args
        )
    return Fleet(start=start, end=end + LIVE_AHEAD_S, pods=pods)


def job_pods(name: str, namespace: str, start: int, stop: int, phase: str, args) -> list[FleetPod]:
    pods = []
    for i in range(args.pods_per_job):
        role, index = ("ps", 0) if i == 0 else ("worker", i - 1)
        labels = {
            "label_elasticjob_dlrover_name": name,
            "label_elasticjob_dlrover_replica_type": role,
            "label_elasticjob_dlrover_replica_index": str(index),
        }
        pods.append(
            FleetPod(
                namespace,
                f"{name}-edljob-{role}-{index}",
                "ElasticJob",
                name,
                labels,
                start,
                stop,
                "Running" if role == "ps" else phase,
                4,
                16384,
                2.5,
                6000,
            )
        )
    return pods


def tsdb(args) -> tuple[Path, int]:
    """The blocks of the fleet these parameters describe, and when they were built:
    reused from the cache while their live pods still run, else built anew."""
    key = f"p{args.pods}-d{args.days}-j{args.pods_per_job}-h{args.job_hours:g}-l{args.live_pods}"
    folder = Path(args.cache) / key
    blocks, meta = folder / "data", folder / "fleet.json"
    if meta.exists():
        built_at = json.loads(meta.read_text())["built_at"]
        if time.time() < built_at + LIVE_AHEAD_S - 900:
            print(f"reusing {blocks} (built {(time.time() - built_at) / 60:.0f} min ago)")
            return blocks, built_at
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    built_at = int(time.time())
    print(f"building {blocks}; load average {os.getloadavg()}")
    began = time.monotonic()
    whole = fleet(args, built_at)
    samples = blocks_made = 0
    converting: subprocess.Popen | None = None
    first, last = whole.start // BLOCK_S, whole.end // BLOCK_S
    for block in range(first, last + 1):
        # The pods alive in this block, rendered over it alone: a file of two hours.
        part = Fleet(
            start=max(whole.start, block * BLOCK_S),
            end=min(whole.end, (block + 1) * BLOCK_S - 1),
            pods=[
                p
                for p in whole.pods
                if p.start < (block + 1) * BLOCK_S and p.end >= block * BLOCK_S
            ],
        )
        path = folder / f"{block}.om"
        with open(path, "w") as out:
            for line in part.render():
                out.write(line + "\n")
                samples += not line.startswith("#")
            out.write("# EOF\n")
        if converting is not None and converting.wait() != 0:
            raise RuntimeError(f"promtool failed: {converting.args}")
        # promtool turns this file into its block while the next one is written.
        converting = subprocess.Popen(
            f"promtool tsdb create-blocks-from openmetrics -q {path} {blocks} && rm {path}",
            shell=True,
            stdout=subprocess.DEVNULL,
        )
        blocks_made += 1
    if converting is not None and converting.wait() != 0:
        raise RuntimeError("promtool failed on the last block")
    print(
        f"{samples:,} samples in {blocks_made} blocks of two hours: "
        f"{time.monotonic() - began:.0f} s; load average {os.getloadavg()}"
    )
    meta.write_text(json.dumps({"built_at": built_at, "samples": samples}))
    return blocks, built_at


def cpu_s(pid: int) -> float:
    """CPU seconds a process has used (user and system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    args = parse_args()
    blocks, built_at = tsdb(args)
    if args.build_only:
        return 0
    work = blocks.parent
    (work / "prometheus.yml").write_text("global:\n  scrape_interval: 60s\n")
    port = 19090
    # Blocks stay two hours long: compacting 14 days of them would compete with Brain.
    prom = subprocess.Popen(
        ["prometheus", f"--config.file={work / 'prometheus.yml'}",
         f"--storage.tsdb.path={blocks}", "--storage.tsdb.retention.time=60d",
         "--storage.tsdb.max-block-duration=2h",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    name = f"brain_bench_{uuid.uuid4().hex[:10]}"
    try:
        for _ in range(300):
            try:
                if requests.get(f"http://127.0.0.1:{port}/-/ready", timeout=1).ok:
                    break
            except requests.RequestException:
                pass
            time.sleep(1)
        with psycopg.connect(f"{args.pg}/postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        url = f"{args.pg.replace('postgresql://', 'postgresql+psycopg://')}/{name}"
        migrate.upgrade(url)
        env = {**os.environ, "BRAIN_DATABASE_URL": url,
               "BRAIN_PROMETHEUS_URL": f"http://127.0.0.1:{port}", "BRAIN_COLLECT_DELAY_S": "0",
               "BRAIN_PROMETHEUS_TIMEOUT_S": "120"}  # fmt: skip
        first = built_at // 60 * 60 - args.days * 86400
        span_min = math.ceil((time.time() - first) / 60)
        print(f"load average {os.getloadavg()}")
        for label, command in (
            (f"backfill {span_min} min", ["collect", "--backfill", f"{span_min}m"]),
            ("live cycle", ["collect", "--once"]),
            ("live cycle again", ["collect", "--once"]),
        ):
            began, prom_began = time.monotonic(), cpu_s(prom.pid)
            done = subprocess.run([sys.executable, "-c", MEASURE, *command], env=env,
                                  capture_output=True, text=True)  # fmt: skip
            rss = [line for line in done.stderr.splitlines() if line.startswith("max_rss_mib")]
            print(
                f"{label}: {time.monotonic() - began:.1f} s, exit {done.returncode}, "
                f"{rss[-1] if rss else '?'}, Prometheus cpu {cpu_s(prom.pid) - prom_began:.1f} s; "
                f"{done.stdout.strip()[-300:]}; "
                f"load average {os.getloadavg()}"
            )
    finally:
        prom.terminate()
        prom.wait(30)
        with psycopg.connect(f"{args.pg}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return 0


if __name__ == "__main__":
    sys.exit(main())
