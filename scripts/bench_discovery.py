"""Benchmark discovery and backfill at cluster scale against a real Prometheus.

The synthetic fleet of the tests (tests/collectors/fleet.py) at scale: ``--pods``
training pods (jobs of ``--pods-per-job``: one PS, the rest workers, each job running
``--job-hours``) spread over ``--days``, scraped every 60 s, plus ``--live-pods`` pods of
jobs running through the last hour. Its OpenMetrics is written to ``--workdir``, turned
into TSDB blocks by ``promtool tsdb create-blocks-from openmetrics``, and served by
Debian's ``prometheus``. Then, on a fresh PostgreSQL database:

1. ``brain collect --backfill <days>d``: wall time and Brain's peak RSS (targets: 10 min,
   600 MiB for 14 days x 2,000 pods on two cores);
2. ``brain collect --once``: one live cycle over the running pods (target: 10 s).

Figures mean little on a busy machine: say under what load they were taken.

    .venv/bin/python scripts/bench_discovery.py                       # the full size
    .venv/bin/python scripts/bench_discovery.py --pods 200 --days 2 --live-pods 200
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
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
MEASURE = (
    "import resource, sys\n"
    "from api.main import main\n"
    "code = main(sys.argv[1:])\n"
    "print(f'max_rss_mib {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}',"
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
    p.add_argument("--workdir", default=None, help="where to write (default: a temp dir)")
    p.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432", help="PostgreSQL")
    return p.parse_args()


def fleet(args) -> Fleet:
    end = int(time.time()) // 60 * 60
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
        pods += job_pods(f"live-{n:05d}", f"team-{n % 20:02d}", end - H, end, "Running", args)
    return Fleet(start=start, end=end, pods=pods)


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


def main() -> int:
    args = parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="brain-bench-discovery-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"workdir {work}; load average {os.getloadavg()}")
    source, blocks = work / "fleet.om", work / "data"
    began = time.monotonic()
    the_fleet = fleet(args)
    lines = 0
    with open(source, "w") as out:
        for line in the_fleet.render():
            out.write(line + "\n")
            lines += 1
        out.write("# EOF\n")
    print(
        f"openmetrics: {lines:,} lines, {source.stat().st_size / 2**30:.2f} GiB in "
        f"{time.monotonic() - began:.0f} s"
    )
    began = time.monotonic()
    shutil.rmtree(blocks, ignore_errors=True)
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(source), str(blocks)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    print(f"promtool: {time.monotonic() - began:.0f} s")
    (work / "prometheus.yml").write_text("global:\n  scrape_interval: 60s\n")
    port = 19090
    prom = subprocess.Popen(
        ["prometheus", f"--config.file={work / 'prometheus.yml'}",
         f"--storage.tsdb.path={blocks}", "--storage.tsdb.retention.time=60d",
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
                time.sleep(1)
        with psycopg.connect(f"{args.pg}/postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        url = f"{args.pg.replace('postgresql://', 'postgresql+psycopg://')}/{name}"
        migrate.upgrade(url)
        env = {**os.environ, "BRAIN_DATABASE_URL": url,
               "BRAIN_PROMETHEUS_URL": f"http://127.0.0.1:{port}", "BRAIN_COLLECT_DELAY_S": "0",
               "BRAIN_PROMETHEUS_TIMEOUT_S": "120"}  # fmt: skip
        for label, command in (
            ("backfill", ["collect", "--backfill", f"{args.days}d"]),
            ("live cycle", ["collect", "--once"]),
        ):
            began = time.monotonic()
            done = subprocess.run([sys.executable, "-c", MEASURE, *command], env=env,
                                  capture_output=True, text=True)  # fmt: skip
            rss = [line for line in done.stderr.splitlines() if line.startswith("max_rss_mib")]
            print(
                f"{label}: {time.monotonic() - began:.1f} s, exit {done.returncode}, "
                f"{rss[-1] if rss else '?'}; {done.stdout.strip()[-300:]}"
            )
        print(f"load average {os.getloadavg()}")
    finally:
        prom.terminate()
        prom.wait(30)
        with psycopg.connect(f"{args.pg}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
