"""Hours and totals add up field by field: every field, as pages add up hundreds."""

from __future__ import annotations

from dataclasses import fields

from brain.portraits.jobs import Totals
from brain.summaries.hours import Hours


def test_every_field_of_hours_and_totals_adds_up():
    # Each field n (1, 2, ...) of one plus 10 × n of the other: 11 × n in every field.
    one = Hours(*range(1, len(fields(Hours)) + 1))
    ten = Hours(*(10 * n for n in range(1, len(fields(Hours)) + 1)))
    assert one + ten == Hours(*(11 * n for n in range(1, len(fields(Hours)) + 1)))
    counts = range(1, len(fields(Totals)))  # all but the hours
    a, b = Totals(*counts, one), Totals(*(10 * n for n in counts), ten)
    assert a + b == Totals(*(11 * n for n in counts), one + ten)
