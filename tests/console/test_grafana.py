"""The Grafana dashboard: provisioned by docker-compose.yml, and every query names a
metric Brain exposes or one of the exporters its collector documents reads (cAdvisor,
DCGM, kube-state-metrics, node exporter)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from prometheus_client import CollectorRegistry

from api.state import server_state
from collectors.queries import DEFAULT_TEMPLATES

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "brain.json"
# PromQL words that are not metric names.
PROMQL_WORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
    "unless", "offset", "le",
}  # fmt: skip
SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (not functions, labels or keywords)."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings (label values, regexes)
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # range selectors
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    expr = re.sub(r"\$\{?\w+\}?", "", expr)  # Grafana and template placeholders
    names = set()
    for match in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expr):
        following = expr[match.end() :].lstrip()
        if following.startswith("(") or match.group() in PROMQL_WORDS:
            continue
        if re.match(r"^\d", expr[match.start() - 1 : match.start()] or " "):
            continue
        names.add(match.group())
    return names


def brain_exposes(client) -> set[str]:
    """Every sample name of Brain's /metrics, from the registry's families (so a counter
    that has not counted yet is included too)."""
    registry: CollectorRegistry = server_state(client.app).telemetry.registry
    names = set()
    for family in registry.collect():
        names.add(family.name)
        names.update(family.name + suffix for suffix in SUFFIXES.get(family.type, ()))
    return names


def dashboard_queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        if isinstance(query, dict):
            exprs.append(re.sub(r"label_values\((\w+),.*\)", r"\1", query["query"]))
    return exprs


def test_the_extractor_finds_metrics_and_nothing_else():
    expr = (
        'histogram_quantile(0.99, sum by (le, route) (rate(x_bucket{a=~"b.*"}[5m]))) / on (pod) y'
    )
    assert metric_names(expr) == {"x_bucket", "y"}
    assert metric_names('topk(15, brain_group_waste_gpu_hours{namespace=~"$namespace"})') == {
        "brain_group_waste_gpu_hours"
    }


def test_every_query_names_a_metric_brain_or_its_exporters_expose(client, history):
    exporters = set().union(*(metric_names(t) for t in DEFAULT_TEMPLATES.values()))
    assert {"DCGM_FI_DEV_GPU_UTIL", "container_cpu_usage_seconds_total"} <= exporters
    known = brain_exposes(client) | exporters
    queries = dashboard_queries()
    assert len(queries) >= 15
    unknown = {name for q in queries for name in metric_names(q)} - known
    assert unknown == set()
    # The board covers Brain's health, waste by namespace and group, and DCGM per job.
    read = set().union(*(metric_names(q) for q in queries))
    assert {
        "brain_http_request_duration_seconds_bucket",
        "brain_ingested_points_total",
        "brain_plans",
        "brain_namespace_waste_gpu_hours",
        "brain_group_efficiency",
        "DCGM_FI_DEV_GPU_UTIL",
    } <= read


def test_gpu_panels_link_to_the_consoles_job_page():
    dashboard = json.loads(DASHBOARD.read_text())
    links = [
        link["url"]
        for panel in dashboard["panels"]
        if any("DCGM" in t["expr"] for t in panel.get("targets", []))
        for link in panel["fieldConfig"]["defaults"]["links"]
    ]
    assert links and all(
        "/ui/pods/${__field.labels.namespace}/${__field.labels.pod}" in u for u in links
    )


def test_compose_provisions_the_dashboard_and_its_datasource():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    grafana = compose["services"]["grafana"]
    mounts = {target: source for source, target, *_ in (v.split(":") for v in grafana["volumes"])}
    provisioning = ROOT / mounts["/etc/grafana/provisioning"].removeprefix("./")
    dashboards = mounts["/var/lib/grafana/dashboards"]
    assert (ROOT / dashboards.removeprefix("./") / "brain.json").samefile(DASHBOARD)
    provider = yaml.safe_load((provisioning / "dashboards" / "brain.yml").read_text())
    assert provider["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards"
    source = yaml.safe_load((provisioning / "datasources" / "prometheus.yml").read_text())
    # The panels name this datasource by uid; Prometheus is the compose service.
    assert source["datasources"][0]["uid"] == "prometheus"
    assert source["datasources"][0]["url"] == "http://prometheus:9090"
    assert all(p.startswith("127.0.0.1:") for p in grafana["ports"])


def test_namespace_panels_link_to_the_consoles_namespace_page(client, history):
    dashboard = json.loads(DASHBOARD.read_text())
    panels = [
        panel
        for panel in dashboard["panels"]
        if panel.get("targets")
        and all(t["expr"].startswith("brain_namespace_") for t in panel["targets"])
    ]
    # GPU-hours wasted, efficiency, core- and GiB-hours wasted, OOM kills.
    assert len(panels) == 4
    for panel in panels:
        [link] = panel["fieldConfig"]["defaults"]["links"]
        assert link["url"] == "${console_url}/ui/namespaces/${__field.labels.namespace}"
        # As Grafana fills it in for the series of namespace ml: that namespace's page.
        path = (
            link["url"].replace("${console_url}", "").replace("${__field.labels.namespace}", "ml")
        )
        page = client.get(path)
        assert page.status_code == 200 and "<h1>Namespace ml</h1>" in page.text, panel["title"]
