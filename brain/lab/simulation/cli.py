"""``brain simulate``: the subcommand's parser and handler."""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import tempfile
import warnings
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brain.lab.simulation.families.draw import FAMILIES
from brain.lab.simulation.scenarios import SCENARIOS

if TYPE_CHECKING:
    from brain.client import BrainClient
    from brain.lab.simulation.metrics import ScenarioResult

# Loggers of the in-process Brain (migrations, the app's start-up), quiet but for errors.
IN_PROCESS_LOGGERS = ("alembic", "api", "brain.retraining")
COLUMNS = (
    "scenario",
    "seed",
    "best_steps_per_sec",
    "reached_steps_per_sec",
    "plans_to_95pct",
    "sizing_plans_to_95pct",
    "plans_applied",
    "over_limit_seconds",
    "oom_kills",
    "oom_kills_after_brain_size",
    "plans_cpu_limit_below_cpu",
    "oom_fixes_lost",
    "oscillations",
    "core_hours",
    "best_core_hours",
    "slow_node_delay_s",
)


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "simulate",
        help="drive Brain through a simulated training job",
        description="Run a simulated training job (throughput model fitted to measured "
        "tables) with a job master that applies Brain's plans, and print its figures. "
        "By default Brain runs in-process on a throwaway SQLite database; --url drives a "
        "running Brain over HTTP (with --token, or BRAIN_TOKEN, when it requires tokens).",
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--scenario",
        choices=[*SCENARIOS, "all"],
        help="which scenario to run (all: every one)",
    )
    which.add_argument(
        "--random",
        type=int,
        metavar="N",
        help="N random PS jobs drawn with --seed from the throughput families in turn "
        "(measured curves, hot PS, communication-bound; brain.lab.simulation.families.draw), "
        "one simulated hour each, and the distribution of their figures per family",
    )
    parser.add_argument(
        "--family",
        choices=[*FAMILIES, "classic"],
        help="with --random: draw every job from this family; classic is the earlier draw "
        "from the optimizers' own throughput form (PS and all-reduce jobs)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--seeds", type=int, default=1, help="run this many seeds from --seed on (default 1)"
    )
    parser.add_argument(
        "--horizon", type=float, default=None, help="simulated seconds (default: the scenario's)"
    )
    parser.add_argument(
        "--ps-busy",
        type=_share,
        default=1.0,
        metavar="SHARE",
        help="judge each run against a best whose PS use at most this share of their CPU, "
        "0 < SHARE <= 1 (default 1: PS sized to exactly what they serve; 0.85 keeps the "
        "headroom Brain's PS rules keep)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON, one object per run")
    parser.add_argument("--chart", type=Path, help="write steps/s and allocation over time (PNG)")
    parser.add_argument("--url", help="a running Brain (default: in-process)")
    parser.add_argument(
        "--token",
        default=os.environ.get("BRAIN_TOKEN"),
        help="API token (write scope) for --url (default: BRAIN_TOKEN)",
    )
    parser.set_defaults(handler=_simulate)


def _simulate(args) -> int:
    # One line per HTTP request would drown the figures.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    # Imported here: `brain --help` loads this module to add the subcommand.
    from brain.lab.simulation.run import run_scenario

    if args.random is not None:
        return _simulate_random(args, run_scenario)
    if args.family is not None:
        raise SystemExit("brain simulate: --family goes with --random")
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    results: list[ScenarioResult] = []
    with ExitStack() as stack:
        client = _client(args.url, args.token, stack, args.app_factory)
        for name in names:
            for seed in range(args.seed, args.seed + args.seeds):
                run, result = run_scenario(
                    client, SCENARIOS[name], seed, args.horizon, args.ps_busy
                )
                results.append(result)
                if args.chart and seed == args.seed:
                    from brain.lab.simulation.chart import write_chart

                    path = args.chart
                    if len(names) > 1:
                        path = path.with_name(f"{path.stem}-{name}{path.suffix}")
                    write_chart(run, path, args.ps_busy)
    if args.json:
        for result in results:
            print(json.dumps(asdict(result)))
    else:
        _print_table(results)
        if args.seeds > 1:
            _print_summary(results)
    return 0


def _simulate_random(args, run_scenario) -> int:
    from brain.lab.simulation.families.draw import family_scenarios
    from brain.lab.simulation.random_jobs import random_scenarios

    if args.random < 1:
        raise SystemExit("brain simulate: --random needs at least 1 job")
    if args.family == "classic":
        scenarios = random_scenarios(args.random, args.seed)
    else:
        scenarios = family_scenarios(args.random, args.seed, args.family)
    results: list[ScenarioResult] = []
    with ExitStack() as stack:
        client = _client(args.url, args.token, stack, args.app_factory)
        for scenario in scenarios:
            results.append(run_scenario(client, scenario, args.seed, args.horizon, args.ps_busy)[1])
    if args.json:
        for result in results:
            print(json.dumps(asdict(result)))
    else:
        _print_table(results)
        for family in dict.fromkeys(r.family or "classic" for r in results):
            _print_distribution(family, [r for r in results if (r.family or "classic") == family])
    return 0


def _share(text: str) -> float:
    """A share in (0, 1], for ``--ps-busy``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 1, got {text}")
    return value


def _print_distribution(family: str, results: list[ScenarioResult]) -> None:
    """What the targets ask of random jobs, per family: reached/best, 95 % within 3
    sizing plans, OOM kills after Brain's sizes, and the invariants in every job."""
    print()
    for line in distribution_lines(family, results):
        print(line)


def distribution_lines(family: str, results: list[ScenarioResult]) -> list[str]:
    ratios = sorted(
        r.reached_steps_per_sec / r.best_steps_per_sec if r.best_steps_per_sec > 0 else 0.0
        for r in results
    )
    within_3 = sum(
        1 for r in results if r.sizing_plans_to_95pct is not None and r.sizing_plans_to_95pct <= 3
    )
    brain_ooms = sum(r.oom_kills_after_brain_size for r in results)
    all_ooms = sum(r.oom_kills for r in results)
    lines = [
        f"{family}: {len(results)} random jobs",
        f"reached/best: median {statistics.median(ratios):.3f}, 10th percentile "
        f"{_percentile(ratios, 0.1):.3f}, min {ratios[0]:.3f}",
        f"at 95 % of the best within 3 plans that change counts or CPU: "
        f"{within_3 / len(results):.0%} of the jobs",
        f"OOM kills after a size Brain chose: {brain_ooms} "
        f"({10 * brain_ooms / len(results):.1f} per 10 jobs), of {all_ooms} OOM kills",
    ]
    by: dict[str, int] = {}
    for r in results:
        for chooser, kills in r.oom_kills_by_chooser.items():
            by[chooser] = by.get(chooser, 0) + kills
    if by:
        lines.append(
            "  by the optimizer that chose the size: "
            + ", ".join(f"{name} {kills}" for name, kills in sorted(by.items(), key=_most_first))
        )
    for field in (
        "over_limit_seconds",
        "plans_cpu_limit_below_cpu",
        "oscillations",
        "oom_fixes_lost",
    ):
        values = [getattr(r, field) for r in results]
        hit = sum(1 for v in values if v)
        lines.append(f"{field}: total {sum(values):g}, in {hit} of {len(values)} jobs")
    return lines


def _most_first(item: tuple[str, int]) -> tuple[int, str]:
    return -item[1], item[0]


def _percentile(ordered: list[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolating linearly."""
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _client(
    url: str | None, token: str | None, stack: ExitStack, create_app: Callable[..., Any] | None
) -> BrainClient:
    from brain.client import BrainClient

    if url:
        return stack.enter_context(BrainClient(url, token=token))
    with warnings.catch_warnings():
        # Starlette would rather see httpx2 under its test client; this in-process use
        # is ours, not the user's to act on.
        warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
        from starlette.testclient import TestClient

    from brain.config import Settings
    from brain.db import migrate

    # The HTTP app's factory comes from the ``brain`` program (api.main): brain never
    # imports api.
    if create_app is None:
        raise SystemExit("brain simulate: no API app to run in-process; pass --url")

    # The in-process Brain is private to this run: its migrations and start-up notes (an
    # open API on loopback) are no news to the user, whose figures follow.
    for name in IN_PROCESS_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="brain-simulate-"))
    database_url = f"sqlite:///{directory}/brain.db"
    migrate.upgrade(database_url)
    from brain.lab.simulation.best import SITE_JOB_CPU

    app = create_app(
        Settings(database_url=database_url, summary_interval_s=0, default_job_cpu=SITE_JOB_CPU)
    )
    http = stack.enter_context(TestClient(app, base_url="http://brain.local"))
    return BrainClient(http=http)


def _print_table(results: list[ScenarioResult]) -> None:
    rows = [[_cell(getattr(r, c)) for c in COLUMNS] for r in results]
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(COLUMNS)]
    print("  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths, strict=True)))
    for row in rows:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))


def _print_summary(results: list[ScenarioResult]) -> None:
    print()
    print("per scenario over seeds: reached/best median, plans_to_95pct max, invariant maxima")
    for name in dict.fromkeys(r.scenario for r in results):
        runs = [r for r in results if r.scenario == name]
        ratio = statistics.median(r.reached_steps_per_sec / r.best_steps_per_sec for r in runs)
        to_95 = [r.plans_to_95pct for r in runs]
        worst = "never" if None in to_95 else str(max(to_95))
        core = statistics.median(r.core_hours / r.best_core_hours for r in runs)
        print(
            f"{name:18s} reached/best {ratio:.3f}  plans_to_95pct max {worst}  "
            f"over_limit_s max {max(r.over_limit_seconds for r in runs):g}  "
            f"oom_fixes_lost max {max(r.oom_fixes_lost for r in runs)}  "
            f"oscillations max {max(r.oscillations for r in runs)}  "
            f"core_hours/best median {core:.3f}"
        )


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
