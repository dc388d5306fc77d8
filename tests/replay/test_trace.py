"""Reading run summaries into the normalized run table."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime

import pandas as pd
import pytest

from brain.replay.resources import present
from brain.replay.trace import RUN_COLUMNS, TraceError, TraceFile, check_normalized, normalize


def test_a_day_trace_has_utc_midnight_starts_and_five_minute_samples():
    table = normalize(
        pd.DataFrame(
            {
                "workload": ["w", "w"],
                "day": ["2024-03-02", "2024-03-01"],
                "samples": [288, 100],
                "req_memory_mib": [4096, 4096],
                "mem_max": [1.0, 2.0],
            }
        )
    )
    assert list(table.columns) == list(RUN_COLUMNS)
    assert table["start"].tolist() == [
        pd.Timestamp(datetime(2024, 3, 1, tzinfo=UTC)),
        pd.Timestamp(datetime(2024, 3, 2, tzinfo=UTC)),
    ]
    # sorted by time; seq keeps the input position; 100 x 5 min, 288 x 5 min
    assert table["seq"].tolist() == [1, 0]
    assert table["duration_h"].tolist() == pytest.approx([100 * 5 / 60, 24.0])
    assert [r.name for r in present(table)] == ["memory"]


def test_an_hour_trace_is_a_gpu_trace_of_one_card_with_one_minute_samples():
    table = normalize(
        pd.DataFrame(
            {"workload": ["g"], "hour": [3], "samples": [60], "gpu_mem_mib_max": [20000.0]}
        ),
        gpu_memory_mib=40960,
    )
    row = table.iloc[0]
    assert row["start"] == pd.Timestamp(datetime(1970, 1, 1, 3, tzinfo=UTC))
    assert row["duration_h"] == pytest.approx(1.0)
    assert row["gpu_mem_total_mib"] == 40960
    assert row["req_gpu"] == 1.0
    assert row["req_gpu_memory_mib"] == 40960
    assert [r.name for r in present(table)] == ["gpu_memory"]


def test_timestamps_durations_and_card_sizes_given_in_the_trace_win():
    table = normalize(
        pd.DataFrame(
            {
                "workload": ["w", "w"],
                "ts": [1_700_000_000, 1_700_003_600],
                "start": ["2024-01-01T10:00:00Z", "2024-01-01T09:00:00Z"],
                "duration_s": [1800, 7200],
                "gpu_mem_mib_max": [1.0, 1.0],
                "gpu_mem_total_mib": [24576, 24576],
                "req_gpu": [2, 2],
            }
        ),
        sample_minutes=99,
    )
    # `start` is preferred over `ts`
    assert table["start"].dt.hour.tolist() == [9, 10]
    assert table["duration_h"].tolist() == pytest.approx([2.0, 0.5])
    assert table["req_gpu_memory_mib"].tolist() == [2 * 24576] * 2


def test_a_gzipped_csv_loads(tmp_path):
    path = tmp_path / "runs.csv.gz"
    with gzip.open(path, "wt") as f:
        f.write("workload,day,samples,req_cpu,cpu_p95\nw,2024-01-01,12,2,0.5\n")
    table = TraceFile(path).load()
    assert table["duration_h"].tolist() == [1.0]
    assert [r.name for r in present(table)] == ["cpu"]


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (pd.DataFrame({"day": ["2024-01-01"], "samples": [1]}), "workload"),
        (pd.DataFrame({"workload": ["w"], "samples": [1]}), "time column"),
        (pd.DataFrame({"workload": ["w"], "day": ["2024-01-01"]}), "samples"),
        (pd.DataFrame({"workload": ["w"], "day": ["not a day"], "samples": [1]}), "times"),
    ],
)
def test_unreadable_traces_are_refused_with_the_reason(frame, message):
    with pytest.raises(TraceError, match=message):
        normalize(frame)


def test_a_table_from_another_source_must_have_every_run_column():
    table = normalize(pd.DataFrame({"workload": ["w"], "day": ["2024-01-01"], "samples": [1]}))
    with pytest.raises(TraceError, match="lacks duration_h"):
        check_normalized(table.drop(columns=["duration_h"]))
    with pytest.raises(TraceError, match="timezone-aware"):
        check_normalized(table.assign(start=table["start"].dt.tz_localize(None)))


def test_a_missing_file_is_a_trace_error(tmp_path):
    with pytest.raises(TraceError, match="cannot read"):
        TraceFile(tmp_path / "nope.csv").load()
