"""deploy/kubernetes: both overlays render, every object is valid against the
Kubernetes schemas (offline: kubernetes-validate ships them; the ServiceMonitor and the
PrometheusRule against schemas kept in tests/fixtures), and the objects fit together and
fit Brain: settings it knows, commands it has, probes on its health endpoints, gRPC open
only to the job masters' namespaces."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from api.main import build_parser
from brain.config import CollectorSettings, MetricsTenants, Settings
from tests.kustomize_subset import render

ROOT = Path(__file__).resolve().parent.parent
KUBERNETES = ROOT / "deploy" / "kubernetes"
OVERLAYS = ["try", "external"]
# The oldest Kubernetes release still maintained when these manifests were written.
KUBERNETES_VERSION = "1.31.0"
CUSTOM_SCHEMAS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): ROOT
    / "tests/fixtures/k8s/servicemonitor-v1.schema.json",
    ("monitoring.coreos.com/v1", "PrometheusRule"): ROOT
    / "tests/fixtures/k8s/prometheusrule-v1.schema.json",
}
# Secrets an operator creates before applying (docs/deployment.md); every other Secret
# a pod reads must be in the overlay.
CREATED_BY_OPERATOR = {
    "try": {"brain-bootstrap"},
    "external": {"brain-bootstrap", "brain-database"},
}


def _objects(overlay: str) -> dict[tuple[str, str], dict]:
    return {
        (o["kind"], o["metadata"]["name"]): o for o in render(KUBERNETES / "overlays" / overlay)
    }


def _brain_deployment(objects) -> dict:
    return objects[("Deployment", "brain")]


def _pod(objects) -> dict:
    return _brain_deployment(objects)["spec"]["template"]["spec"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_is_valid_against_its_schema(overlay):
    objects = render(KUBERNETES / "overlays" / overlay)
    assert len(objects) >= 10
    for obj in objects:
        custom = CUSTOM_SCHEMAS.get((obj["apiVersion"], obj["kind"]))
        if custom is not None:
            jsonschema.validate(obj, json.loads(custom.read_text()))
        else:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_an_invalid_object_is_caught():
    """The validation rejects what the API server would (a check that can fail)."""
    objects = _objects("external")
    deployment = _brain_deployment(objects)
    deployment["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)
    monitor = objects[("ServiceMonitor", "brain")]
    monitor["spec"]["endpoints"][0]["intervall"] = "30s"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(monitor, json.loads(next(iter(CUSTOM_SCHEMAS.values())).read_text()))
    rule = objects[("PrometheusRule", "brain")]
    rule["spec"]["groups"][0]["rules"][0]["for"] = "an hour"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            rule,
            json.loads(CUSTOM_SCHEMAS[("monitoring.coreos.com/v1", "PrometheusRule")].read_text()),
        )


def _kubectl_kustomize_major() -> int:
    """The major version of the kustomize inside kubectl (0 without kubectl)."""
    if shutil.which("kubectl") is None:
        return 0
    shown = subprocess.run(
        ["kubectl", "version", "--client"], capture_output=True, text=True, timeout=60
    ).stdout
    found = re.search(r"Kustomize Version: v(\d+)", shown)
    return int(found[1]) if found else 0


@pytest.mark.skipif(
    _kubectl_kustomize_major() < 4, reason="no kubectl with kustomize 4 or later (patches:)"
)
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_renderer_agrees_with_kubectl_kustomize(overlay):
    rendered = subprocess.run(
        ["kubectl", "kustomize", str(KUBERNETES / "overlays" / overlay)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    theirs = [_normalized(o) for o in yaml.safe_load_all(rendered) if o]
    ours = [_normalized(o) for o in render(KUBERNETES / "overlays" / overlay)]
    key = lambda o: (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])  # noqa: E731
    assert sorted(ours, key=key) == sorted(theirs, key=key)


def _normalized(obj: dict) -> dict:
    """kubectl wraps long base64 values over lines; Kubernetes ignores the breaks."""
    if obj["kind"] == "Secret":
        obj["data"] = {k: "".join(v.split()) for k, v in obj.get("data", {}).items()}
    return obj


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_everything_lands_in_the_brain_namespace(overlay):
    objects = _objects(overlay)
    assert objects[("Namespace", "brain")]
    for (kind, name), obj in objects.items():
        if kind != "Namespace":
            assert obj["metadata"]["namespace"] == "brain", (kind, name)
    [subject] = objects[("RoleBinding", "brain-elasticjob-reader")]["subjects"]
    assert (subject["name"], subject["namespace"]) == ("brain", "brain")
    assert ("ServiceAccount", "brain") in objects
    assert _pod(objects)["serviceAccountName"] == "brain"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_pod_probes_health_runs_as_non_root_on_a_read_only_root(overlay):
    pod = _pod(_objects(overlay))
    [brain] = pod["containers"]
    assert brain["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert brain["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    ports = {p["name"]: p["containerPort"] for p in brain["ports"]}
    assert ports == {"http": 8080, "grpc": 50001}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    for container in pod["initContainers"] + pod["containers"]:
        context = container["securityContext"]
        assert context["readOnlyRootFilesystem"] is True
        assert context["allowPrivilegeEscalation"] is False
        assert context["capabilities"]["drop"] == ["ALL"]
        assert {"requests", "limits"} <= set(container["resources"])
        assert container["image"] == "brain:0.1.0"
    mounts = {m["mountPath"] for m in brain["volumeMounts"]}
    settings = _objects(overlay)[("ConfigMap", "brain-settings")]["data"]
    # Where Brain writes: its model directory and /tmp, both volumes.
    assert {"/tmp", settings["BRAIN_MODEL_DIR"]} <= mounts


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_containers_run_real_brain_commands_and_the_settings_are_brains(overlay, monkeypatch):
    objects = _objects(overlay)
    pod = _pod(objects)
    [migrate] = pod["initContainers"]
    [brain] = pod["containers"]
    assert migrate["command"] == ["brain", "db", "upgrade"]
    assert brain["command"] == ["brain", "serve"]
    for container in (migrate, brain):
        args = build_parser().parse_args(container["command"][1:])
        assert hasattr(args, "handler")
    settings = objects[("ConfigMap", "brain-settings")]["data"]
    known = {f"BRAIN_{name.upper()}" for name in Settings.model_fields}
    for nested in ("collector", "cluster", "priority"):
        nested_type = Settings.model_fields[nested].default_factory
        known |= {f"BRAIN_{name.upper()}" for name in nested_type.model_fields}
    env_names = set(settings) | {e["name"] for e in brain["env"]}
    assert env_names <= known, env_names - known
    # The values are valid settings; the pod serves beyond loopback with tokens on.
    for name in list(Settings.model_fields):
        monkeypatch.delenv(f"BRAIN_{name.upper()}", raising=False)
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    parsed = Settings()
    assert (parsed.host, parsed.port, parsed.grpc_port) == ("0.0.0.0", 8080, 50001)
    assert parsed.auth == "required" and parsed.k8s_lookup is True
    # gRPC without tokens (DLRover 0.6.1 sends none) only behind the NetworkPolicy.
    assert parsed.grpc_auth is False


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_secrets_the_pods_read_are_in_the_overlay_or_created_first(overlay):
    objects = _objects(overlay)
    read = set()
    for (kind, _), obj in objects.items():
        if kind in ("Deployment", "StatefulSet"):
            spec = obj["spec"]["template"]["spec"]
            for container in spec.get("initContainers", []) + spec["containers"]:
                for env in container.get("env", []):
                    ref = env.get("valueFrom", {}).get("secretKeyRef")
                    if ref:
                        read.add(ref["name"])
    present = {name for kind, name in objects if kind == "Secret"}
    assert read - present == CREATED_BY_OPERATOR[overlay]
    assert {"brain-database", "brain-bootstrap"} <= read


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_selectors_find_the_pods_and_the_service(overlay):
    objects = _objects(overlay)
    pod_labels = _brain_deployment(objects)["spec"]["template"]["metadata"]["labels"]
    service = objects[("Service", "brain")]

    def selects(selector: dict, labels: dict) -> bool:
        return selector.items() <= labels.items()

    assert selects(service["spec"]["selector"], pod_labels)
    assert selects(objects[("PodDisruptionBudget", "brain")]["spec"]["selector"]["matchLabels"],
                   pod_labels)  # fmt: skip
    assert selects(objects[("NetworkPolicy", "brain")]["spec"]["podSelector"]["matchLabels"],
                   pod_labels)  # fmt: skip
    monitor = objects[("ServiceMonitor", "brain")]["spec"]
    assert selects(monitor["selector"]["matchLabels"], service["metadata"]["labels"])
    assert {e["port"] for e in monitor["endpoints"]} <= {
        p["name"] for p in service["spec"]["ports"]
    }
    assert {e["path"] for e in monitor["endpoints"]} == {"/metrics"}
    assert {(p["name"], p["port"]) for p in service["spec"]["ports"]} == {
        ("http", 8080),
        ("grpc", 50001),
    }
    # The database (try) is not one of the server's pods: the API selects only those.
    if overlay == "try":
        database = objects[("StatefulSet", "brain-postgres")]["spec"]["template"]["metadata"]
        assert not selects(service["spec"]["selector"], database["labels"])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_grpc_is_open_only_to_the_job_masters_namespaces(overlay):
    policy = _objects(overlay)[("NetworkPolicy", "brain")]["spec"]
    assert policy["policyTypes"] == ["Ingress"]
    by_port = {}
    for rule in policy["ingress"]:
        for port in rule["ports"]:
            by_port[port["port"]] = rule.get("from")
    assert by_port["http"] is None  # any source: every API call needs a token
    [source] = by_port["grpc"]
    assert source == {
        "namespaceSelector": {"matchLabels": {"brain.dlrover.io/job-masters": "true"}}
    }


def test_try_runs_one_brain_with_its_own_postgresql_reachable_by_brain_only():
    objects = _objects("try")
    assert _brain_deployment(objects)["spec"]["replicas"] == 1
    database_url = objects[("Secret", "brain-database")]["data"]["url"]
    url = base64.b64decode(database_url).decode()
    assert url == "postgresql+psycopg://brain:brain-try-only@brain-postgres:5432/brain"
    assert ("Service", "brain-postgres") in objects
    policy = objects[("NetworkPolicy", "brain-postgres")]["spec"]
    [rule] = policy["ingress"]
    [source] = rule["from"]
    assert source["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "server"


def test_try_reads_the_clusters_prometheus_and_backfills_two_weeks(monkeypatch):
    settings = _objects("try")[("ConfigMap", "brain-settings")]["data"]
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    collector = CollectorSettings()
    assert collector.prometheus_url == "http://prometheus-operated.monitoring.svc:9090"
    assert collector.discovery is True
    assert collector.discovery_backfill_s == 14 * 86400
    assert (
        "BRAIN_PROMETHEUS_URL" not in _objects("external")[("ConfigMap", "brain-settings")]["data"]
    )


def test_external_keeps_two_brains_and_one_may_be_disrupted_at_a_time():
    objects = _objects("external")
    assert _brain_deployment(objects)["spec"]["replicas"] == 2
    assert objects[("PodDisruptionBudget", "brain")]["spec"]["maxUnavailable"] == 1
    assert not any(kind == "StatefulSet" for kind, _ in objects)


@pytest.mark.parametrize(("overlay", "tenant_series"), [("try", "public"), ("external", "token")])
def test_the_external_overlay_shows_tenant_series_only_to_a_token(overlay, tenant_series):
    """A Brain reachable by other teams does not hand every namespace's users, groups and
    resource-hours to anyone who can reach /metrics (BRAIN_METRICS_TENANT_SERIES)."""
    settings = _objects(overlay)[("ConfigMap", "brain-settings")]["data"]
    default = Settings.model_fields["metrics_tenant_series"].default
    given = settings.get("BRAIN_METRICS_TENANT_SERIES", default)
    assert MetricsTenants(given) == tenant_series
