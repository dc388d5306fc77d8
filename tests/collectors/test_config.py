"""Mapping, query configuration and small helpers of the collector (no Prometheus)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta

import pytest

from brain.config import CollectorSettings
from brain.services.collector_store import CollectableJob
from collectors.cli import parse_duration
from collectors.client import PrometheusError, _parse
from collectors.mapping import JobIndex, MappingConfigError, PodRef, SeriesMapper
from collectors.queries import (
    DEFAULT_TEMPLATES,
    QueryConfigError,
    build_queries,
    promql_string,
    queries_from_settings,
    to_brain_unit,
)

T = datetime(2024, 1, 1, tzinfo=UTC)


def _job(id_: int, uid: str, name: str, namespace: str | None = None) -> CollectableJob:
    return CollectableJob(id=id_, uid=uid, name=name, namespace=namespace, start=T)


def test_dlrover_pod_names_by_default():
    mapper = SeriesMapper.from_settings(CollectorSettings())
    ref = mapper.pod_ref({"namespace": "ml", "pod": "ctr-model-edljob-worker-12"})
    assert ref == PodRef("ctr-model", "ml", "ctr-model-edljob-worker-12", "worker", 12)
    assert mapper.pod_ref({"namespace": "ml", "pod": "coredns-7d9f"}) is None
    assert mapper.pod_ref({"namespace": "ml"}) is None


def test_label_mapping_falls_back_to_the_pod_name_for_role_and_index():
    mapper = SeriesMapper(mode="labels")
    labels = {
        "namespace": "ml",
        "pod": "mnist-edljob-ps-1",
        "label_elasticjob_dlrover_name": "mnist",
    }
    assert mapper.pod_ref(labels) == PodRef("mnist", "ml", "mnist-edljob-ps-1", "ps", 1)
    labels.update(
        label_elasticjob_dlrover_replica_type="chief", label_elasticjob_dlrover_replica_index="0"
    )
    assert mapper.pod_ref(labels).role == "chief"
    # No job label: not a training pod.
    assert mapper.pod_ref({"namespace": "ml", "pod": "mnist-edljob-ps-1"}) is None
    # Custom label and a pod name that says nothing: no role, not mapped.
    custom = SeriesMapper(mode="labels", job_label="label_team_job")
    assert custom.pod_ref({"pod": "trainer-abc", "label_team_job": "x"}) is None


def test_a_pod_or_role_no_node_may_be_named_after_is_not_mapped():
    """Label values are anyone's text: a pod or role holding a control or bidirectional
    character would become a stored node name (brain.names refuses it)."""
    mapper = SeriesMapper(mode="labels")
    labels = {"namespace": "ml", "pod": "mnist-edljob-ps-1", "label_elasticjob_dlrover_name": "m"}
    assert mapper.pod_ref(labels) is not None
    assert mapper.pod_ref(labels | {"pod": "mnist-edljob-ps-1\nFORGED"}) is None
    role = {"label_elasticjob_dlrover_replica_type": "\u202eREKROW"}
    assert mapper.pod_ref(labels | role) is None
    assert SeriesMapper().pod_ref({"pod": "mn\u200bist-edljob-ps-1"}) is None


def test_pattern_must_name_job_role_and_index():
    with pytest.raises(MappingConfigError, match="index"):
        SeriesMapper(pod_name_pattern=r"(?P<job>.+)-(?P<role>\w+)")
    with pytest.raises(MappingConfigError, match="not a regex"):
        SeriesMapper(pod_name_pattern="(")
    custom = SeriesMapper(pod_name_pattern=r"(?P<job>[a-z0-9-]+)--(?P<role>\w+)\.(?P<index>\d+)")
    assert custom.pod_ref({"pod": "my-job--trainer.3"}).job_key == "my-job"


def test_job_index_prefers_uid_then_name_in_the_same_namespace(caplog):
    index = JobIndex(
        [
            _job(1, "u-1", "mnist", "team-a"),
            _job(2, "u-2", "mnist", "team-b"),
            _job(3, "u-3", "resnet"),
            _job(4, "u-4", "bert", "x"),
            _job(5, "u-5", "bert", "x"),
        ]
    )

    def ref(key, namespace):
        return PodRef(key, namespace, f"{key}-edljob-worker-0", "worker", 0)

    assert index.resolve(ref("u-2", "anything")).id == 2
    assert index.resolve(ref("mnist", "team-b")).id == 2
    assert index.resolve(ref("mnist", "team-c")) is None
    assert index.resolve(ref("mnist", None)) is None  # two candidates
    assert index.resolve(ref("resnet", "team-z")).id == 3  # job without a namespace
    assert index.resolve(ref("bert", "x")) is None
    assert "matches 2 running jobs" in caplog.text
    assert index.resolve(ref("ghost", "team-a")) is None


def test_queries_validate_overrides_and_render_the_selector():
    with pytest.raises(QueryConfigError, match="unknown query name"):
        queries_from_settings(CollectorSettings(prometheus_queries={"cpuu": "x"}))
    with pytest.raises(QueryConfigError, match=r"\$podname"):
        queries_from_settings(CollectorSettings(prometheus_queries={"cpu": "foo{$podname}"}))
    queries = queries_from_settings(
        CollectorSettings(
            prometheus_queries={
                "gpu_util": 'avg by (namespace, pod) (label_replace(DCGM_FI_DEV_GPU_UTIL, "pod", '
                '"$1", "exported_pod", "(.+)"))'
            },
            prometheus_selector='cluster="prod",',
        )
    )
    assert '"$1"' in queries.pod_query("gpu_util")  # label_replace's $1 is left alone
    cpu = queries.pod_query("cpu")
    assert 'pod=~"^(?P<job>.+)-edljob-(?P<role>[a-z]+)-(?P<index>\\\\d+)$"' in cpu
    assert cpu.endswith('cluster="prod"}[2m]))')
    assert set(DEFAULT_TEMPLATES) >= {"cpu", "memory_mib", "gpu_util", "gpu_memory_mib", "oom"}


def test_step_time_is_read_only_when_configured():
    assert "step_time_s" not in queries_from_settings(CollectorSettings()).sample_signals
    by_name = queries_from_settings(
        CollectorSettings(prometheus_step_time=" dlrover:step_time ", prometheus_selector='c="x"')
    )
    assert by_name.sample_signals[-1] == "step_time_s"
    assert by_name.pod_query("step_time_s") == (
        'avg by (namespace, pod) (dlrover:step_time{pod=~"^(?P<job>.+)-edljob-(?P<role>[a-z]+)'
        '-(?P<index>\\\\d+)$", c="x"})'
    )
    template = "1 / rate(steps_total{$selector}[$rate_window])"
    by_query = queries_from_settings(
        CollectorSettings(prometheus_step_time=template, collect_mapping="labels")
    )
    assert by_query.pod_query("step_time_s").startswith('(1 / rate(steps_total{pod!=""}[2m]))')
    with pytest.raises(QueryConfigError, match="BRAIN_PROMETHEUS_STEP_TIME"):
        queries_from_settings(CollectorSettings(prometheus_queries={"step_time_s": template}))
    with pytest.raises(QueryConfigError, match=r"\$job"):
        queries_from_settings(CollectorSettings(prometheus_step_time="x{$job}"))


def test_label_mapping_joins_kube_pod_labels():
    queries = build_queries(
        mapping="labels",
        pod_name_pattern=".*",
        job_label="label_job",
        role_label="label_role",
        index_label="label_job",
    )
    memory = queries.pod_query("memory_mib")
    assert "group_left (label_job, label_role)" in memory
    assert 'kube_pod_labels{label_job!=""}' in memory
    with pytest.raises(QueryConfigError):
        build_queries(
            mapping="other", pod_name_pattern="", job_label="", role_label="", index_label=""
        )


def test_units_and_strings():
    assert to_brain_unit("memory_mib", 3 * 1024 * 1024 * 1024) == 3072.0
    assert to_brain_unit("gpu_util", 40) == 0.4
    assert to_brain_unit("cpu", 1.25) == 1.25
    assert to_brain_unit("gpu_memory_mib", 1000) == 1000
    assert promql_string('a"b\\c') == '"a\\"b\\\\c"'


def test_answers_are_validated_and_nan_dropped():
    answer = [{"metric": {"pod": "p"}, "values": [[1700000000, "1.5"], [1700000015, "NaN"]]}]
    [(labels, points)] = _parse(answer, "values")
    assert labels == {"pod": "p"}
    assert points == [(datetime.fromtimestamp(1700000000, UTC), 1.5)]
    for bad in ({"result": []}, [{"values": []}], [{"metric": [], "values": []}], [1]):
        with pytest.raises(PrometheusError) as info:
            _parse(bad, "values")
        assert info.value.kind == "garbage"


def test_durations():
    assert parse_duration("90") == timedelta(seconds=90)
    assert parse_duration("2h") == timedelta(hours=2)
    assert parse_duration("1d12h") == timedelta(hours=36)
    assert parse_duration("1.5m") == timedelta(seconds=90)
    for bad in ("", "2x", "h", "-5m", "0", "2h 3m"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_duration(bad)
