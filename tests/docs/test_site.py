"""The docs site builds with ``mkdocs build --strict`` (a broken link or anchor, or a nav
entry without its page, fails), and its configuration page names every setting."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from brain.reference import settings_fields

ROOT = Path(__file__).resolve().parents[2]


def test_every_setting_has_a_description():
    undocumented = [variable for variable, field in settings_fields() if not field.description]
    assert undocumented == []


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    # mkdocs and mkdocs-material are in the test extra; an environment installed before
    # they were added skips rather than fails (pip install -e '.[test]' brings them).
    pytest.importorskip("mkdocs", reason="pip install -e '.[test]' installs mkdocs")
    pytest.importorskip("material", reason="pip install -e '.[test]' installs mkdocs-material")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    return out


def test_the_site_builds_strictly_and_lists_every_setting(site):
    page = (site / "configuration" / "index.html").read_text()
    missing = [variable for variable, _ in settings_fields() if variable not in page]
    assert missing == []


def test_each_optimizer_page_lists_its_settings(site):
    from brain.optimizing.registry import load_registry

    page = (site / "optimizers" / "index.html").read_text()
    registry = load_registry()
    for name in registry.names():
        optimizer = registry.get(name)
        for setting in optimizer.Settings.model_fields:
            assert setting in page, (name, setting)


def test_the_readmes_links_into_the_repository_resolve():
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text)
    assert targets
    assert [t for t in targets if not (ROOT / t).exists()] == []
