"""The one rule for stored names (brain.names): what it refuses is exactly the Unicode
categories Cc, Cf, Cs, Zl and Zp, as this Python's Unicode database has them."""

from __future__ import annotations

import re
import sys
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brain.errors import InvalidInput
from brain.names import (
    NAME_PATTERN,
    REFUSED_CATEGORIES,
    REFUSED_RANGES,
    check_name,
    name_problem,
)
from tests.builders.names import name_holding_refused


def _in_ranges(code_point: int) -> bool:
    return any(first <= code_point <= last for first, last in REFUSED_RANGES)


def test_the_table_refuses_exactly_the_categories_of_this_pythons_unicode():
    """Every code point of a refused category is in the table; the table holds nothing
    else but code points this Python does not know yet (the table is Unicode 15.1's)."""
    missing, extra = [], []
    for code_point in range(sys.maxunicode + 1):
        category = unicodedata.category(chr(code_point))
        refused = category in REFUSED_CATEGORIES
        if refused and not _in_ranges(code_point):
            missing.append(f"U+{code_point:04X}")
        if _in_ranges(code_point) and not refused and category != "Cn":
            extra.append(f"U+{code_point:04X} {category}")
    assert not missing, f"add to REFUSED_RANGES: {missing[:20]}"
    assert not extra, f"not refused categories: {extra[:20]}"


def test_the_check_agrees_with_the_table_on_every_code_point():
    refused = [cp for cp in range(sys.maxunicode + 1) if name_problem(f"a{chr(cp)}b")]
    assert refused == [cp for cp in range(sys.maxunicode + 1) if _in_ranges(cp)]
    assert len(refused) == 2_285  # 2,278 in Unicode 14 plus U+13439..U+1343F of 15.0


def test_the_openapi_pattern_is_the_rule_within_the_basic_multilingual_plane():
    """The pattern clients and fuzzers read refuses what the check refuses there, but the
    surrogates (ECMAScript regexes see astral characters as pairs of them)."""
    pattern = re.compile(NAME_PATTERN)
    for code_point in range(0x10000):
        if 0xD800 <= code_point <= 0xDFFF:
            assert pattern.fullmatch(chr(code_point))
            continue
        assert (pattern.fullmatch(chr(code_point)) is None) == _in_ranges(code_point)
    assert "\\U" not in NAME_PATTERN  # ECMAScript has no \U escape


@given(st.text(max_size=40))
def test_a_name_is_refused_exactly_when_it_holds_a_refused_category(text):
    holds = any(unicodedata.category(c) in REFUSED_CATEGORIES for c in text)
    assert (name_problem(text) is not None) == holds


@given(name_holding_refused())
def test_the_refusal_names_the_field_the_first_offending_character_and_its_position(name):
    position = next(i for i, c in enumerate(name) if unicodedata.category(c) in REFUSED_CATEGORIES)
    with pytest.raises(InvalidInput) as refused:
        check_name(name, "nodes.0.role")
    assert refused.value.field == "nodes.0.role"
    assert f"U+{ord(name[position]):04X}" in refused.value.message
    assert f"at position {position};" in refused.value.message
    assert refused.value.message.startswith("nodes.0.role: holds ")


def test_the_reported_defects_are_described_by_name():
    assert name_problem("w0\n2026-01-01 ERROR FORGED LOG LINE").startswith(
        "holds U+000A (control character) at position 2;"
    )
    assert name_problem("\u202eREKROW").startswith(
        "holds U+202E RIGHT-TO-LEFT OVERRIDE (format character) at position 0;"
    )
    assert name_problem("worker-0") is None
    assert name_problem("Zürich ワーカー 0") is None  # letters and spaces of any script
