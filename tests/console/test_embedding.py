"""JSON embedded in console pages cannot end its script element or start markup."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from api.console.embedding import script_json
from api.console.pages import templates

TEMPLATES = Path(__file__).parents[2] / "api" / "console" / "templates"
# Characters an HTML parser (or an old JavaScript one) treats specially inside a script.
DANGEROUS = ("<", ">", "&", "\u2028", "\u2029")

finite = st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | finite | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def test_markup_in_a_string_becomes_unicode_escapes():
    role = "</script><meta http-equiv=refresh content=0;url=//x>"
    assert str(script_json({"role": role})) == (
        '{"role": "\\u003c/script\\u003e\\u003cmeta http-equiv=refresh content=0;url=//x\\u003e"}'
    )
    assert str(script_json(["a&b", "<!--", "\u2028\u2029"])) == (
        '["a\\u0026b", "\\u003c!--", "\\u2028\\u2029"]'
    )
    # Other characters are written as they are (the page is UTF-8).
    assert str(script_json("résumé ✓")) == '"résumé ✓"'


@given(json_values)
def test_embedded_json_holds_no_dangerous_character_and_reads_back_equal(value):
    text = str(script_json(value))
    assert not any(c in text for c in DANGEROUS)
    assert json.loads(text) == value


def test_the_console_embeds_json_only_through_the_escaping_filter():
    assert templates.env.filters["tojson"] is script_json
    raw = {
        path.name: re.findall(r"\|\s*safe\b|Markup|autoescape\s+false", path.read_text())
        for path in TEMPLATES.glob("*.html")
    }
    assert {name: found for name, found in raw.items() if found} == {}
    rendered = templates.env.from_string("<script>{{ v|tojson }}</script>").render(v="</script>")
    assert rendered == '<script>"\\u003c/script\\u003e"</script>'
