"""Reference tables in Markdown, generated from the code's own descriptions: every
``BRAIN_*`` setting (``brain.config``) and every optimizer's settings. The docs site
renders them (``docs/hooks.py``), so the documentation cannot drift from the code, and a
setting without a description fails a test."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from brain.config import ClusterSettings, CollectorSettings, PrioritySettings, Settings
from brain.optimizing.changes import ANY_ROLE
from brain.optimizing.registry import OptimizerRegistry

# Settings' nested groups are read from flat BRAIN_* variables like the others.
GROUPS: dict[str, type[BaseModel]] = {
    "collector": CollectorSettings,
    "cluster": ClusterSettings,
    "priority": PrioritySettings,
}


def settings_fields() -> Iterator[tuple[str, FieldInfo]]:
    """``(environment variable, field)`` of every setting, groups flattened."""
    for name, field in Settings.model_fields.items():
        if name in GROUPS:
            for inner, inner_field in GROUPS[name].model_fields.items():
                yield f"BRAIN_{inner.upper()}", inner_field
        else:
            yield f"BRAIN_{name.upper()}", field


def settings_table() -> str:
    rows = [
        (f"`{variable}`", _default(field), field.description or "")
        for variable, field in settings_fields()
    ]
    return _table(("variable", "default", "meaning"), rows)


def optimizer_settings_table(registry: OptimizerRegistry, name: str) -> str:
    """The settings of optimizer ``name``: default, bounds and description of each."""
    optimizer = registry.get(name)
    if optimizer is None:
        raise KeyError(f"no optimizer {name!r} is registered")
    rows = [
        (f"`{setting}`", _default(field), _bounds(field), field.description or "")
        for setting, field in optimizer.Settings.model_fields.items()
    ]
    return _table(("setting", "default", "bounds", "meaning"), rows)


def _default(field: FieldInfo) -> str:
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    if "shown_default" in extra:  # a default that depends on the machine (a home directory)
        return f"`{extra['shown_default']}`"
    if field.default_factory is not None:
        value: Any = field.default_factory()
    elif field.default is PydanticUndefined or field.default is None:
        return "unset"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "see below"
    if hasattr(value, "isoformat"):
        value = value.isoformat().replace("+00:00", "Z")
    elif hasattr(value, "value"):  # an enum
        value = value.value
    text = value if isinstance(value, str) else json.dumps(value, separators=(", ", ": "))
    return f"`{text}`"


def _bounds(field: FieldInfo) -> str:
    parts = []
    for item in field.metadata:
        for attr, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            value = getattr(item, attr, None)
            if value is not None:
                parts.append(f"{sign} {value}")
    return ", ".join(parts)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def optimizers_reference(registry: OptimizerRegistry) -> str:
    """A section per registered optimizer: its stages, where it runs by default and what
    it may change (its declarations), its description (the class docstring) and its
    settings."""
    sections = []
    for info in registry.info():
        stages = ", ".join(f"`{stage}`" for stage in info.stages)
        defaults = ", ".join(
            f"`{stage}` (position {at})" for stage, at in info.default_order.items()
        )
        declared = (
            f"Stages: {stages}. Runs by default at: {defaults or 'none'}. "
            f"Sets the groups of: {_roles(info.changes['groups'])}; "
            f"migrates nodes of: {_roles(info.changes['nodes'])}."
        )
        sections.append(
            f"### `{info.name}`\n\n{declared}\n\n{inspect.cleandoc(info.description)}\n\n"
            + optimizer_settings_table(registry, info.name)
        )
    return "\n".join(sections)


def _roles(names: list[str]) -> str:
    return ", ".join("every role" if n == ANY_ROLE else f"`{n}`" for n in names) or "none"
