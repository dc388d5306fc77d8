"""``brain backtest`` and ``brain train`` read their runs from the same arguments."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from brain.cli import build_parser
from brain.lab import run_source
from brain.replay.trace import DEFAULT_GPU_MEMORY_MIB


@pytest.mark.parametrize("command", ["backtest", "train"])
def test_a_trace_or_the_database_and_the_card_size(command):
    parser = build_parser()
    args = parser.parse_args([command, "--trace", "runs.csv", "--gpu-memory-mib", "40960"])
    assert (args.trace, args.from_db, args.gpu_memory_mib) == (Path("runs.csv"), False, 40960.0)
    args = parser.parse_args([command, "--from-db"])
    assert (args.trace, args.from_db, args.gpu_memory_mib) == (None, True, 81920.0)


@pytest.mark.parametrize("command", ["backtest", "train"])
@pytest.mark.parametrize("argv", [[], ["--trace", "runs.csv", "--from-db"]])
def test_exactly_one_source(command, argv, capsys):
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args([command, *argv])
    assert stop.value.code == 2
    assert "--trace" in capsys.readouterr().err


def test_the_default_card_is_the_trace_readers_and_the_parser_needs_no_pandas():
    assert run_source.DEFAULT_GPU_MEMORY_MIB == DEFAULT_GPU_MEMORY_MIB == 81920
    code = "import sys, brain.lab.run_source; print('pandas' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
