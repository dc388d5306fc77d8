"""No Docker engine runs here: check the compose file parses and refers to real files."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_compose_wires_postgres_prometheus_and_brain():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert set(services) == {"postgres", "prometheus", "grafana", "brain"}
    assert "healthcheck" in services["postgres"]
    brain = services["brain"]
    assert brain["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert brain["environment"]["BRAIN_DATABASE_URL"].startswith("postgresql+psycopg://")
    assert "--migrate" in brain["command"]
    # DLRover masters reach the gRPC service on their default port.
    assert brain["environment"]["BRAIN_GRPC_PORT"] == "50001"
    assert "127.0.0.1:50001:50001" in brain["ports"]
    # Authentication is off by default only because the port stays on the host's loopback.
    assert brain["environment"]["BRAIN_AUTH"] == "${BRAIN_AUTH:-disabled}"
    assert all(port.startswith("127.0.0.1:") for port in brain["ports"])


def test_compose_refers_only_to_files_that_exist():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    build = compose["services"]["brain"]["build"]
    dockerfile = ROOT / build["context"] / build["dockerfile"]
    assert dockerfile.is_file()
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (ROOT / source).exists(), source
    for line in dockerfile.read_text().splitlines():
        # Sources from the build context (a COPY --from copies from an earlier stage).
        if line.startswith("COPY ") and "--from=" not in line:
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), source
