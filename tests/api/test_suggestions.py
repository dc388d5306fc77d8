"""GET /api/v1/suggestions: JSON and text, with and without history."""

from __future__ import annotations

import math

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.state import server_state
from brain.config import Settings
from brain.domain import RoleSpec
from brain.optimizing import load_registry
from brain.retraining.service import ModelHolder
from brain.summaries import summarize_job
from optimizers.startup import StartupSettings
from tests.builders import add_node, add_points, at, make_job, recent_hour
from tests.builders.traces import random_runs

ROLES = {
    "ps": RoleSpec(count=2, cpu=8, memory_mib=16384, gpu=0),
    "worker": RoleSpec(count=4, cpu=8, memory_mib=32768, gpu=1),
}


@pytest.fixture
def settings(pg_url, db, tmp_path) -> Settings:
    """The seed rules alone at the create stage: their numbers are worked out below; the
    default stage (learned_margin last) has its own test."""
    seed = {**load_registry().default_pipelines(), "create": ["startup", "gpu_cpu"]}
    return Settings(database_url=pg_url, stage_optimizers=seed, model_dir=str(tmp_path / "m"))


def _run(session, uid: str, days_ago: float, started: bool = True) -> None:
    """A 1-hour carol/bert run on A100: PS CPU 2 then 4 cores, memory 4096 then 6144 MiB;
    workers CPU 3 then 5, memory 10240 then 12288 MiB, GPU utilization 0.4 then 0.5,
    GPU memory 8000 then 9000 of 40000 MiB. Not ``started``: registered as the README
    does, without ``started_at``."""
    t0 = recent_hour(days_ago)
    job = make_job(
        session,
        uid,
        start=t0,
        user="carol",
        name="bert",
        dataset="wiki",
        gpu_type="A100",
        roles=ROLES,
        started=started,
    )
    for name in ("ps-0", "ps-1"):
        add_node(session, job, name, "ps", created_at=t0, cpu=8, memory_mib=16384)
        add_points(
            session,
            job,
            name,
            "ps",
            [
                {"ts": at(t0, m), "cpu": c, "memory_mib": mem}
                for m, c, mem in ((0, 2, 4096), (60, 4, 6144))
            ],
        )
    for name in ("worker-0", "worker-1"):
        add_node(session, job, name, "worker", created_at=t0, cpu=8, memory_mib=32768, gpu=1)
        add_points(
            session,
            job,
            name,
            "worker",
            [
                {
                    "ts": at(t0, m),
                    "cpu": c,
                    "memory_mib": mem,
                    "gpu_util": u,
                    "gpu_memory_mib": g,
                    "gpu_memory_total_mib": 40000,
                }
                for m, c, mem, u, g in ((0, 3, 10240, 0.4, 8000), (60, 5, 12288, 0.5, 9000))
            ],
        )
    summarize_job(session, job)


@pytest.fixture
def three_runs(session):
    for i, days_ago in enumerate((3, 2, 1), 1):
        _run(session, f"bert-{i}", days_ago)
    session.commit()


def _roles(body: dict) -> dict[str, dict]:
    return {r.pop("role"): r for r in body["roles"]}


def test_with_history(client, three_runs):
    body = client.get("/api/v1/suggestions", params={"user": "carol", "name": "bert"}).json()

    roles = _roles(body)
    # The past runs had no chief: no chief row; startup's chief sizing is the workers'.
    assert list(roles) == ["ps", "worker"]
    # startup: Σ PS mean CPU 3 + 3 = 6 over a single-PS peak of 4 cores -> 2 PS; peak total
    # PS memory 2 x 6144 / 2 x 1.2 = 7372.8 -> 7373 MiB. gpu_cpu: request mean 3 / 0.5 = 6,
    # limit max 4 / 0.5 = 8 cores.
    assert roles["ps"] == {
        "count": 2,
        "cpu_request": 6,
        "cpu_limit": 8,
        "memory_mib": 7373,
        "oom_risk": None,
        "gpu": 0,
    }
    # gpu_cpu: CPU 4 / 0.5 = 8 and 5 / 0.5 = 10; GPU 1 x max(0.45, 9000/40000) / 0.9 = 0.5,
    # rounded up to 1 GPU. Memory: startup's largest worker use, 12288 MiB. Count: the
    # last run's.
    assert roles["worker"] == {
        "count": 4,
        "cpu_request": 8,
        "cpu_limit": 10,
        "memory_mib": 12288,
        "oom_risk": None,
        "gpu": 1,
    }
    basis = body["basis"]
    # Three runs, but the worker's memory is its peak with no room: not firm.
    assert (basis["match"], basis["confidence"]) == ("group", "low")
    assert basis["note"] == (
        "3 past runs matched by group in the last 90 days; worker peaked at 12288 MiB, "
        "100% of the suggested 12288 MiB (less than 5% room)"
    )
    assert [r["uid"] for r in basis["runs"]] == ["bert-3", "bert-2", "bert-1"]
    assert {r["optimizer"] for r in body["reasons"]} >= {"startup", "gpu_cpu"}


def test_runs_without_started_at_are_timed_from_their_first_sample(client, session):
    for i, days_ago in enumerate((3, 2, 1), 1):
        _run(session, f"bert-{i}", days_ago, started=False)
    session.commit()

    body = client.get("/api/v1/suggestions", params={"user": "carol", "name": "bert"}).json()

    # First sample at the start, finished 1 h later: 3600 s > gpu_cpu's 1800, so gpu_cpu
    # sizes the worker as in test_with_history (request 8, limit 10, 1 GPU) instead of
    # leaving startup's 5 cores behind a "history too thin" reason.
    worker = _roles(body)["worker"]
    assert (worker["cpu_request"], worker["cpu_limit"], worker["gpu"]) == (8, 10, 1)
    assert not any("thin" in r["message"] for r in body["reasons"])
    basis = body["basis"]
    assert basis["note"].startswith("3 past runs matched by group")
    assert "3 without started_at, timed from their first sample" in basis["note"]
    assert {(r["run_seconds"], r["run_length_from"]) for r in basis["runs"]} == {
        (3600.0, "first_sample")
    }


def test_runs_of_unknown_length_do_not_make_confidence_high(client, session):
    # Three succeeded runs with neither started_at nor samples: no rule can tell whether
    # they were long enough, so the suggestion is not "measured".
    for i, days_ago in enumerate((3, 2, 1), 1):
        job = make_job(
            session,
            f"bert-{i}",
            start=recent_hour(days_ago),
            user="carol",
            name="bert",
            roles=ROLES,
            started=False,
        )
        summarize_job(session, job)
    session.commit()

    basis = client.get("/api/v1/suggestions", params={"user": "carol", "name": "bert"}).json()[
        "basis"
    ]

    assert basis["confidence"] == "low"
    assert basis["note"].startswith("only 0 past runs of known length")
    assert "3 of unknown length (no started_at, no samples)" in basis["note"]
    assert [r["run_seconds"] for r in basis["runs"]] == [None, None, None]


def test_thin_history_says_so(client, session):
    _run(session, "bert-1", 1)
    session.commit()

    body = client.get("/api/v1/suggestions", params={"user": "carol", "name": "bert"}).json()

    assert body["basis"]["confidence"] == "low"
    assert "only 1 past run" in body["basis"]["note"]
    # gpu_cpu needs 3 runs: the worker gets startup's largest worker use, 5 cores.
    assert _roles(body)["worker"]["cpu_request"] == 5
    assert any("too thin" in r["message"] for r in body["reasons"])


def test_unknown_user_gets_defaults_and_a_note(client):
    response = client.get("/api/v1/suggestions", params={"user": "nobody", "name": "new"})

    assert response.status_code == 200
    body = response.json()
    defaults = StartupSettings()
    roles = _roles(body)
    assert roles["ps"]["count"] == defaults.default_ps_count
    assert roles["ps"]["cpu_request"] == defaults.default_ps_cpu
    assert roles["worker"]["memory_mib"] == defaults.default_chief_memory_mib
    assert body["basis"] == {
        "match": None,
        "runs": [],
        "window_days": 90,
        "confidence": "none",
        "note": "no succeeded run of user nobody, name new in the last 90 days: "
        "these are the optimizers' defaults, not measurements",
    }


def test_text_table(client, three_runs):
    by_param = client.get(
        "/api/v1/suggestions", params={"user": "carol", "name": "bert", "format": "text"}
    )
    by_accept = client.get(
        "/api/v1/suggestions",
        params={"user": "carol", "name": "bert"},
        headers={"Accept": "text/plain"},
    )

    assert by_param.headers["content-type"].startswith("text/plain")
    assert by_accept.text == by_param.text
    lines = by_param.text.splitlines()
    assert lines[:3] == [
        "role    count  cpu_request  cpu_limit  memory_mib  oom_risk  gpu",
        "ps          2            6          8        7373         -    0",
        "worker      4            8         10       12288         -    1",
    ]
    assert lines[3].startswith("basis: confidence low: 3 past runs matched by group")
    assert "bert-3" in lines[3]
    # Then the cost at the default prices (no BRAIN_PRICE_* set): an hour of ps 2 x (6 x
    # 0.031611 + 7373 / 1024 x 0.004237) = 0.4403464, worker 4 x (8 x 0.031611 + 12 x
    # 0.004237 + 1 a100 x 2.933908) = 12.950560; 13.3909064 x 24 = $321.38 a day.
    answer = client.get("/api/v1/suggestions", params={"user": "carol", "name": "bert"}).json()
    saves = answer["cost"]["saves_usd_per_day"]
    assert answer["cost"]["suggested_usd_per_day"] == pytest.approx(13.3909064 * 24)
    assert (
        lines[4] == f"cost: $321.38 a day; this run would save ${saves:,.2f} a day against bert-3"
    )
    # Then every reason of the JSON answer, one a line, and a final newline.
    assert lines[5] == "why:"
    assert lines[6:] == [f"  {r['optimizer']}: {r['message']}" for r in answer["reasons"]]
    assert by_param.text.endswith("\n")
    # The job has no GPU type in words, never Python's None.
    assert "None" not in by_param.text


def test_text_without_history(client):
    text = client.get(
        "/api/v1/suggestions", params={"group": "team/unknown", "format": "text"}
    ).text

    assert text.splitlines()[3].startswith("basis: confidence none: no succeeded run of group")
    assert "None" not in text and text.endswith("\n")


def test_needs_something_to_look_up(client):
    response = client.get("/api/v1/suggestions")

    assert response.status_code == 422
    assert response.json()["error"]["field"] == "user"


def test_a_user_alone_is_matched_by_their_own_runs(client, three_runs):
    body = client.get("/api/v1/suggestions", params={"user": "carol"}).json()

    basis = body["basis"]
    assert basis["match"] == "user"
    assert [r["uid"] for r in basis["runs"]] == ["bert-3", "bert-2", "bert-1"]
    # the same runs as by group, so the same sizes (worked out in test_with_history)
    assert _roles(body)["ps"]["memory_mib"] == 7373
    nobody = client.get("/api/v1/suggestions", params={"user": "dave"}).json()
    assert nobody["basis"]["note"].startswith("no succeeded run of user dave in the last")


@pytest.fixture
def default_client(pg_url, db, tmp_path):
    settings = Settings(database_url=pg_url, model_dir=str(tmp_path / "models"))
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def test_by_default_learned_margin_sizes_memory_and_cpu_of_every_role(default_client, three_runs):
    body = default_client.get("/api/v1/suggestions", params={"user": "carol", "name": "bert"})
    ps = _roles(body.json())["ps"]
    # PS peaks: memory 6144 MiB and CPU 4 cores (p95 3.9) in each of the 3 runs. Memory:
    # 6144 x (1.3 + 1/sqrt(3)) + 768 headroom = 12302.4 -> 12303 MiB (under the 16384
    # asked). CPU: 4 x 1.0 + 0.05 = 4.05 cores. Count and the limit stay startup's and
    # gpu_cpu's; without a trained model no risk is stated.
    assert ps == {
        "count": 2,
        "cpu_request": 4.05,
        "cpu_limit": 8,
        "memory_mib": math.ceil(6144 * (1.3 + 1 / math.sqrt(3)) + 768),
        "oom_risk": None,
        "gpu": 0,
    }
    assert any(r["optimizer"] == "learned_margin" for r in body.json()["reasons"])


def test_with_a_trained_model_each_size_states_its_oom_risk(default_client, three_runs, session):
    from brain.history.related import RelatedQuery, find_related
    from brain.lab.backtest.learned import fit
    from brain.optimizing.sizing_model import role_history

    table = random_runs(workloads=30, runs=10)
    model = fit(table, table["workload"].notna().to_numpy()).model
    server_state(default_client.app).sizing_models = ModelHolder(model)
    body = default_client.get("/api/v1/suggestions", params={"user": "carol", "name": "bert"})
    ps = _roles(body.json())["ps"]
    # the model's risk of exactly the suggested size, from the PS history (3 runs, 6144 MiB)
    query = RelatedQuery(
        user="carol", dataset=None, group_key="carol/bert", name="bert", window_days=90, limit=10
    )
    history = find_related(session, query).jobs
    ps_history = role_history(history, "ps", "memory", 16384)
    assert list(ps_history.peaks) == [6144, 6144, 6144]
    expected = model.forecast("memory", ps_history).risk_of(ps["memory_mib"])
    assert ps["oom_risk"] == pytest.approx(expected, abs=1e-6) and 0 < expected < 1
    text = default_client.get(
        "/api/v1/suggestions", params={"user": "carol", "name": "bert", "format": "text"}
    ).text
    header, ps_line = text.splitlines()[:2]
    assert header.split() == [
        "role",
        "count",
        "cpu_request",
        "cpu_limit",
        "memory_mib",
        "oom_risk",
        "gpu",
    ]
    assert ps_line.split()[5] == f"{ps['oom_risk']:.2%}"


def test_by_default_gpus_are_counted_per_card(default_client, session):
    # Worker pods of 4 cards: the collector reports their GPU memory summed over the pod
    # (65536 MiB in all), 33 % busy and at most 45 % of that memory used.
    roles = {"worker": RoleSpec(count=2, cpu=8, memory_mib=32768, gpu=4)}
    for i, days_ago in enumerate((3, 2, 1), 1):
        t0 = recent_hour(days_ago)
        job = make_job(
            session, f"gpt-{i}", start=t0, user="erin", name="gpt", gpu_type="A100", roles=roles
        )
        for name in ("worker-0", "worker-1"):
            add_node(session, job, name, "worker", created_at=t0, cpu=8, memory_mib=32768, gpu=4)
            add_points(
                session,
                job,
                name,
                "worker",
                [
                    {
                        "ts": at(t0, m),
                        "cpu": 4,
                        "memory_mib": 10000,
                        "gpu_util": 0.33,
                        "gpu_memory_mib": 0.45 * 65536,
                        "gpu_memory_total_mib": 65536,
                    }
                    for m in (0, 60)
                ],
            )
        summarize_job(session, job)
    session.commit()
    body = default_client.get("/api/v1/suggestions", params={"user": "erin", "name": "gpt"})
    worker = _roles(body.json())["worker"]
    # 29491.2 MiB x (1 + 0.3 / sqrt 3) + 1536 = 36134 MiB over 16384 MiB cards: 3 whole
    # GPUs (it was 0.56: the pod's 65536 MiB taken for one card).
    assert worker["gpu"] == 3


def test_with_room_above_every_peak_three_runs_are_confident(default_client, three_runs):
    # learned_margin: PS 6144 -> 12303 MiB (50% used), workers 12288 x (1.3 + 1/sqrt(3))
    # + 768 = 23837.9 -> 23838 MiB (52% used): room above both, no OOM: high.
    body = default_client.get("/api/v1/suggestions", params={"user": "carol", "name": "bert"})
    assert _roles(body.json())["worker"]["memory_mib"] == math.ceil(
        12288 * (1.3 + 1 / math.sqrt(3)) + 768
    )
    assert body.json()["basis"]["confidence"] == "high"


def test_an_oom_in_the_runs_lowers_confidence(default_client, three_runs, session):
    from sqlalchemy import select

    from brain.db.models import JobRow
    from tests.builders import add_event

    job = session.scalars(select(JobRow).where(JobRow.uid == "bert-2")).one()
    add_event(session, job, at(recent_hour(2), 30), "oom", "worker-1")
    summarize_job(session, job)
    session.commit()

    basis = default_client.get(
        "/api/v1/suggestions", params={"user": "carol", "name": "bert"}
    ).json()["basis"]
    assert basis["confidence"] == "low"
    assert basis["note"].endswith("; 1 OOM kill in these runs")


def _tight_run(session, uid: str, days_ago: float) -> None:
    """A 1-hour run of dave/llm: one worker asks 16384 MiB and peaks at 15900 MiB."""
    t0 = recent_hour(days_ago)
    roles = {"worker": RoleSpec(count=1, cpu=8, memory_mib=16384, gpu=0)}
    job = make_job(session, uid, start=t0, user="dave", name="llm", roles=roles)
    add_node(session, job, "worker-0", "worker", created_at=t0, cpu=8, memory_mib=16384)
    points = [(0, 15000), (30, 15900), (60, 15500)]
    add_points(
        session,
        job,
        "worker-0",
        "worker",
        [{"ts": at(t0, m), "cpu": 4, "memory_mib": mem} for m, mem in points],
    )
    summarize_job(session, job)


def test_memory_capped_at_the_request_is_said_in_plain_words(default_client, session):
    _tight_run(session, "llm-1", 3)
    session.commit()
    query = {"user": "dave", "name": "llm", "format": "text"}
    thin = default_client.get("/api/v1/suggestions", params=query).text
    # One run, of a job without a GPU type: said in words, not as Python's None.
    assert "  gpu_cpu: history too thin for worker: 1 runs over 1800 s without a GPU type" in thin
    assert "None" not in thin
    for i, days_ago in enumerate((2, 1), 2):
        _tight_run(session, f"llm-{i}", days_ago)
    session.commit()

    body = default_client.get("/api/v1/suggestions", params={"user": "dave", "name": "llm"}).json()
    assert _roles(body)["worker"]["memory_mib"] == 16384
    # 15900 x (1.3 + 1/sqrt(3)) + 768 = 30617.0 -> 30618 MiB wanted; the request 16384
    # leaves 16384 - 15900 = 484 MiB, 3% of the peak.
    wanted = math.ceil(15900 * (1.3 + 1 / math.sqrt(3)) + 768)
    (margin,) = [r["message"] for r in body["reasons"] if r["optimizer"] == "learned_margin"]
    assert (
        "memory capped at the request: the peak 15900 MiB x 1.88 + headroom calls for "
        f"{wanted} MiB, but the request 16384 MiB is the owner's ceiling "
        "(cap_memory_at_request), which leaves 484 MiB (3%) above the peak; request more "
        "to get the margin"
    ) in margin
    basis = body["basis"]
    assert basis["confidence"] == "low"
    assert basis["note"].endswith(
        "; worker peaked at 15900 MiB, 97% of the suggested 16384 MiB (less than 5% room)"
    )
