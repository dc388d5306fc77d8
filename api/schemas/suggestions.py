"""What a new run should request, as JSON or as a table for a terminal."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

TABLE_COLUMNS = ("role", "count", "cpu_request", "cpu_limit", "memory_mib", "oom_risk", "gpu")
# Basis runs named on the text line; the JSON lists them all.
TEXT_RUNS = 5


class RoleSuggestionOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    role: str
    count: int | None = Field(description="Nodes of this role; null: no opinion.")
    cpu_request: float | None = Field(description="CPU request per node, cores.")
    cpu_limit: float | None = Field(description="CPU limit per node, cores; null: none.")
    memory_mib: float | None = Field(description="Memory per node, MiB.")
    oom_risk: float | None = Field(
        None,
        description="Probability (0..1) that the next run's memory peak exceeds `memory_mib` "
        "(an OOM kill), calibrated by the learned recommender; null without a trained model.",
    )
    gpu: float | None = Field(description="GPUs per node; null: no opinion.")


class BasisRunOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    uid: str
    name: str
    finished_at: datetime | None
    run_seconds: float | None = Field(
        description="How long the run ran, seconds; null: unknown (no started_at, no samples)."
    )
    run_length_from: str | None = Field(
        description="`started_at` (its registered start), `first_sample` (registered without "
        "started_at: timed from its first sample to its end), or null (unknown)."
    )


class BasisOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    match: str | None = Field(
        description="How the runs were found: `user+dataset`, else `group`, else `name`; "
        "`user` when the user was the only key given; null when none was."
    )
    runs: list[BasisRunOut] = Field(description="Related succeeded runs used, newest first.")
    window_days: int = Field(description="How far back runs were searched.")
    confidence: str = Field(
        description="`none`: no history, the values are defaults; `low`: fewer than 3 runs "
        "of known length, or OOM kills in the runs, or a memory peak within 5 % of the "
        "suggested memory (the note says which); `high`: 3 runs or more of known length "
        "without either."
    )
    note: str


class ReasonOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    optimizer: str
    message: str


class SuggestionCostOut(BaseModel):
    """Dollars a day at the prices in effect (BRAIN_PRICE_*, else the default table)."""

    # Read from a RunSpend (what run_spend answers), field by field.
    model_config = ConfigDict(from_attributes=True)
    suggested_usd_per_day: float = Field(description="The suggested allocation, a day.")
    last_run_uid: str | None = Field(description="The newest run of the basis; null: none.")
    last_run_usd_per_day: float | None = Field(description="What that run requested, a day.")
    saves_usd_per_day: float | None = Field(
        description="Last run − suggested: what the suggestion saves a day (negative: costs more)."
    )


class SuggestionOut(BaseModel):
    # Read from brain.services.suggestions.Suggestion and its parts, field by field.
    model_config = ConfigDict(from_attributes=True)
    roles: list[RoleSuggestionOut] = Field(description="What to request, per role.")
    basis: BasisOut
    reasons: list[ReasonOut] = Field(description="Why, per optimizer.")
    cost: SuggestionCostOut | None = Field(
        None,
        description="Dollars a day; null when nothing is priced (BRAIN_PRICE_DEFAULTS=false "
        "and no price set).",
    )

    def to_text(self) -> str:
        """An aligned table, one role a line, and the basis in one line under it."""
        rows = [list(TABLE_COLUMNS)] + [
            [r.role, *(_cell(getattr(r, c), c) for c in TABLE_COLUMNS[1:])] for r in self.roles
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_COLUMNS))]
        lines = [
            "  ".join(
                cell.ljust(width) if i == 0 else cell.rjust(width)
                for i, (cell, width) in enumerate(zip(row, widths, strict=True))
            ).rstrip()
            for row in rows
        ]
        if not self.roles:
            lines.append("(no roles known)")
        lines.append(self._basis_line())
        if self.cost is not None and self.cost.saves_usd_per_day is not None:
            lines.append(
                f"cost: ${self.cost.suggested_usd_per_day:,.2f} a day; this run would save "
                f"${self.cost.saves_usd_per_day:,.2f} a day against {self.cost.last_run_uid}"
            )
        if self.reasons:
            lines.append("why:")
            lines.extend(f"  {r.optimizer}: {r.message}" for r in self.reasons)
        return "\n".join(lines) + "\n"

    def _basis_line(self) -> str:
        basis = self.basis
        runs = ", ".join(
            f"{r.uid} {r.finished_at:%Y-%m-%d}" if r.finished_at else r.uid
            for r in basis.runs[:TEXT_RUNS]
        )
        if len(basis.runs) > TEXT_RUNS:
            runs += f" and {len(basis.runs) - TEXT_RUNS} more"
        used = f" ({runs})" if runs else ""
        return f"basis: confidence {basis.confidence}: {basis.note}{used}"


def _cell(value: float | int | None, column: str) -> str:
    if value is None:
        return "-"
    if column == "oom_risk":
        return f"{value:.2%}"
    return f"{value:g}"
