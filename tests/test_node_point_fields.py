"""A node sample's fields are listed once (brain.domain.NodePoint); every other shape of
a node point is derived from it or, where a class must spell its fields out for its
types and bounds, has exactly its fields in its order."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime

from api.schemas.samples import NodePointIn, NodePointOut
from brain.db.models import NodeSampleRow
from brain.domain import NODE_MEASUREMENTS, NODE_POINT_KEY, NodePoint, RoleSpec
from brain.optimizing.context import NodeSample
from brain.services.samples import NODE_COLUMNS, _node_row
from collectors.queries import SAMPLE_SIGNALS, STEP_TIME_SIGNAL

POINT_FIELDS = [f.name for f in fields(NodePoint)]


def test_the_measurements_are_the_point_fields_after_its_node_and_time():
    assert NODE_POINT_KEY == ("name", "role", "index", "ts")
    assert [*NODE_POINT_KEY, *NODE_MEASUREMENTS] == POINT_FIELDS
    assert "gpu_memory_total_mib" in NODE_MEASUREMENTS


def test_api_models_have_the_point_fields_in_order():
    assert list(NodePointIn.model_fields) == POINT_FIELDS
    assert list(NodePointOut.model_fields) == POINT_FIELDS


def test_the_stored_columns_are_the_key_and_the_measurements():
    assert ("node_id", "ts", "job_id", *NODE_MEASUREMENTS) == NODE_COLUMNS
    assert set(NodeSampleRow.__table__.columns.keys()) == set(NODE_COLUMNS)


def test_the_optimizers_sample_is_the_node_the_time_and_the_measurements():
    assert [f.name for f in fields(NodeSample)] == ["node", "ts", *NODE_MEASUREMENTS]


def test_the_collector_signals_are_the_measurements():
    assert [*SAMPLE_SIGNALS, STEP_TIME_SIGNAL] == list(NODE_MEASUREMENTS)


def test_ingest_writes_a_point_in_column_order():
    ts = datetime(2026, 1, 1, tzinfo=UTC)
    point = NodePoint("w-0", "worker", 0, ts, 2.5, 4096.0, 0.5, step_time_s=0.25)
    assert _node_row(7, 3, point) == (7, ts, 3, 2.5, 4096.0, 0.5, None, None, 0.25)


def test_overlay_takes_the_given_values_and_keeps_the_rest():
    current = RoleSpec(count=4, cpu=8.0, memory_mib=16384.0, gpu=1.0, cpu_limit=12.0)
    planned = RoleSpec(count=6, memory_mib=20480.0)
    assert current.overlay(planned) == RoleSpec(
        count=6, cpu=8.0, memory_mib=20480.0, gpu=1.0, cpu_limit=12.0
    )
    assert current.overlay(None) == current
    assert current.overlay(RoleSpec()) == current
    # Zero is a value, not "no opinion".
    assert current.overlay(RoleSpec(count=0)).count == 0
