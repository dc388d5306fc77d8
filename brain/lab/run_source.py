"""The run-source arguments of ``brain backtest`` and ``brain train``: where the runs
come from (a trace or the database) and how a trace's GPUs are read. Building them
imports nothing heavy, so the ``brain`` parser stays fast."""

from __future__ import annotations

import argparse
from pathlib import Path

from brain.replay.resources import DEFAULT_GPU_MEMORY_MIB


def add_run_source(parser: argparse.ArgumentParser, from_db_help: str) -> None:
    """``--trace PATH`` or ``--from-db`` (one of them, required; ``from_db_help`` says
    which jobs the command reads and how), and ``--gpu-memory-mib``."""
    group = parser.add_argument_group(
        "run source", "Where the runs come from: --trace or --from-db."
    )
    source = group.add_mutually_exclusive_group(required=True)
    source.add_argument("--trace", type=Path, metavar="PATH", help="CSV or CSV.gz of run summaries")
    source.add_argument("--from-db", action="store_true", help=from_db_help)
    group.add_argument(
        "--gpu-memory-mib",
        type=float,
        default=DEFAULT_GPU_MEMORY_MIB,
        metavar="MIB",
        help=f"memory of one GPU when the trace does not say (default {DEFAULT_GPU_MEMORY_MIB:g})",
    )
