"""What a stored name may hold: one rule for every name, whatever brings it in.

Jobs, nodes, roles, users, groups, datasets, clusters, tokens and the names in events
and plans end up in log lines, the console and Kubernetes objects. A control character
there forges lines (``"w0\\n... FORGED LOG LINE"``), a bidirectional override shows a
name reversed (U+202E turns ``REKROW`` into ``WORKER``), a zero-width character makes two
names look alike. So a name may hold none of the Unicode categories Cc (controls), Cf
(format: bidirectional controls, zero-width characters, the byte-order mark), Zl and Zp
(line and paragraph separators) and Cs (lone surrogates, which no database can store).

The REST schemas and path parameters (``api.schemas.common``, ``api.params``), the
DLRover gRPC intake (``api.dlrover.report_checks``), the Prometheus collector
(``collectors.mapping``) and ``brain token`` all ask ``name_problem``.
"""

from __future__ import annotations

import re
import unicodedata

from brain.errors import InvalidInput

REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# The code points of those categories as inclusive ranges, as of Unicode 15.1 (Python
# 3.13); tests/test_names.py checks them against the running Python's unicodedata.
REFUSED_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x001F),  # C0 controls: NUL, TAB, LF, CR, ESC, ...
    (0x007F, 0x009F),  # DEL and the C1 controls
    (0x00AD, 0x00AD),  # soft hyphen
    (0x0600, 0x0605),  # Arabic number signs
    (0x061C, 0x061C),  # Arabic letter mark
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),  # Mongolian vowel separator
    (0x200B, 0x200F),  # zero-width space, joiners, LRM, RLM
    (0x2028, 0x202E),  # line and paragraph separators, LRE, RLE, PDF, LRO, RLO
    (0x2060, 0x2064),  # word joiner, invisible operators
    (0x2066, 0x206F),  # LRI, RLI, FSI, PDI and deprecated format controls
    (0xD800, 0xDFFF),  # surrogates
    (0xFEFF, 0xFEFF),  # zero-width no-break space (byte-order mark)
    (0xFFF9, 0xFFFB),  # interlinear annotation
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),  # Egyptian hieroglyph format controls
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x1D173, 0x1D17A),  # musical symbol format controls
    (0xE0001, 0xE0001),  # language tag
    (0xE0020, 0xE007F),  # tag characters
)


def _escaped(code_point: int) -> str:
    return f"\\u{code_point:04x}" if code_point <= 0xFFFF else f"\\U{code_point:08x}"


def _character_class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(
        _escaped(first) if first == last else f"{_escaped(first)}-{_escaped(last)}"
        for first, last in ranges
    )


_REFUSED = re.compile(f"[{_character_class(REFUSED_RANGES)}]")
# The rule as a JSON Schema ``pattern`` for the OpenAPI, written as ECMAScript reads it
# (``\uXXXX``): the ranges within the Basic Multilingual Plane but the surrogates (a
# browser's regex sees every emoji as two of them; a ``\U`` escape would be a letter U).
# The few refused characters beyond it are refused all the same, as the fields'
# descriptions say.
_SURROGATES = (0xD800, 0xDFFF)
_IN_PATTERN = tuple(r for r in REFUSED_RANGES if r[1] <= 0xFFFF and r != _SURROGATES)
NAME_PATTERN = f"^[^{_character_class(_IN_PATTERN)}]*$"
_KINDS = {
    "Cc": "control character",
    "Cf": "format character",
    "Cs": "surrogate",
    "Zl": "line separator",
    "Zp": "paragraph separator",
}
NAME_RULE = (
    "No control, format (bidirectional override, zero-width) or line-separator characters "
    "(Unicode categories Cc, Cf, Cs, Zl, Zp)."
)


def describe(character: str) -> str:
    """``U+202E RIGHT-TO-LEFT OVERRIDE (format character)``, ``U+000A (control
    character)``."""
    category = unicodedata.category(character)
    kind = _KINDS.get(category, f"category {category}")  # one assigned after this Python
    name = unicodedata.name(character, "")
    return f"U+{ord(character):04X} {name} ({kind})" if name else f"U+{ord(character):04X} ({kind})"


def name_problem(name: str) -> str | None:
    """Why ``name`` may not be stored as a name, or None when it may."""
    found = _REFUSED.search(name)
    if found is None:
        return None
    return (
        f"holds {describe(found.group())} at position {found.start()}; a name may not hold "
        "control, format (bidirectional, zero-width) or line-separator characters"
    )


def check_name(name: str, field: str) -> str:
    """``name``, or InvalidInput naming ``field`` when it may not be stored."""
    problem = name_problem(name)
    if problem is not None:
        raise InvalidInput(f"{field}: {problem}", field=field)
    return name
