"""The alerting rules: valid for Prometheus, each alert firing on one input and quiet on
one just like it (promtool's unit tests in tests/fixtures/prometheus), those unit tests
able to fail, and the PrometheusRule for Kubernetes the same groups as the plain file."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "deploy" / "prometheus" / "brain-alerts.yml"
UNIT_TESTS = ROOT / "tests" / "fixtures" / "prometheus" / "brain-alerts-test.yml"
PROMETHEUS_RULE = ROOT / "deploy" / "kubernetes" / "base" / "prometheusrule.yaml"
ALERTS = {
    "BrainNamespaceCpuWasteHigh",
    "BrainNamespaceMemoryWasteHigh",
    "BrainNamespaceGpuWasteHigh",
    "BrainOomKillsRising",
    "BrainCollectorFailing",
    "BrainPlansFailing",
}
PROMTOOL_TIMEOUT_S = 60


def _promtool(*args: str) -> subprocess.CompletedProcess:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail(
            "`promtool` is not on PATH (Debian/Ubuntu: apt-get install prometheus)",
            pytrace=False,
        )
    return subprocess.run([path, *args], capture_output=True, text=True, timeout=PROMTOOL_TIMEOUT_S)


def _alerts(groups: list[dict]) -> set[str]:
    return {rule["alert"] for group in groups for rule in group["rules"]}


def test_the_rules_and_the_config_that_loads_them_are_valid():
    checked = _promtool("check", "rules", str(RULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "6 rules found" in checked.stdout
    config = _promtool("check", "config", str(ROOT / "deploy" / "prometheus.yml"))
    assert config.returncode == 0, config.stdout + config.stderr
    assert "1 rule files found" in config.stdout


def test_each_alert_fires_on_its_case_and_not_on_the_other():
    tested = _promtool("test", "rules", str(UNIT_TESTS))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    cases = yaml.safe_load(UNIT_TESTS.read_text())["tests"]
    checked = [check for case in cases for check in case["alert_rule_test"]]
    firing = {check["alertname"] for check in checked if check["exp_alerts"]}
    quiet = {check["alertname"] for check in checked if not check["exp_alerts"]}
    assert firing == quiet == ALERTS == _alerts(yaml.safe_load(RULES.read_text())["groups"])


@pytest.mark.parametrize(
    ("written", "changed"),
    [
        ("> 0.5", ">= 0.5"),  # the namespace wasting exactly half would fire
        ("> 0.6", ">= 0.6"),  # so would the one wasting exactly 60 % of its memory
        ("> 0.4", ">= 0.4"),  # and the one leaving exactly 40 % of its GPU-hours idle
        (
            "delta(brain_namespace_oom_kills[1h])) > 0",
            "delta(brain_namespace_oom_kills[1h])) != 0",
        ),  # so would a falling count
        ("for: 15m", "for: 5m"),  # the collector alert would fire at 10m, before 15m of errors
        ('outcome=~"error|timeout"', 'outcome=~".+"'),  # no_plan would count as failing
    ],
)
def test_the_unit_tests_catch_a_changed_rule(tmp_path, written, changed):
    """Each quiet case holds its rule at a boundary: moving the rule past it fails."""
    rules = RULES.read_text()
    assert rules.count(written) == 1, written
    (tmp_path / "brain-alerts.yml").write_text(rules.replace(written, changed))
    tests = yaml.safe_load(UNIT_TESTS.read_text())
    tests["rule_files"] = ["brain-alerts.yml"]
    (tmp_path / "test.yml").write_text(yaml.safe_dump(tests))
    tested = _promtool("test", "rules", str(tmp_path / "test.yml"))
    assert tested.returncode != 0, tested.stdout
    assert "FAILED" in tested.stdout + tested.stderr


def test_the_prometheus_rule_holds_the_same_groups_as_the_plain_file():
    plain = yaml.safe_load(RULES.read_text())["groups"]
    custom = yaml.safe_load(PROMETHEUS_RULE.read_text())
    assert (custom["apiVersion"], custom["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert custom["spec"]["groups"] == plain
    assert _alerts(plain) == ALERTS
