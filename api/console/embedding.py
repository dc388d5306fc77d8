"""JSON inside a page's ``<script>`` element, made unable to end the element.

An HTML parser ends a script element at the first ``</script`` whatever the JSON around
it means, and ``<!--`` switches it into a mode where a later ``<script`` changes where it
ends; so data (a node role a job master pushed, say) that holds ``</script><meta ...>``
would otherwise become markup. Every ``<``, ``>`` and ``&`` in the JSON text is written as
its ``\\uXXXX`` escape, which ``JSON.parse`` reads back as the same character; so are
U+2028 and U+2029, which JSON allows in strings and older JavaScript did not.

Registered as the console's ``tojson`` filter: every template embeds JSON through it
(tests/console/test_embedding.py holds that no template marks anything ``|safe``).
"""

from __future__ import annotations

import json
from typing import Any

from markupsafe import Markup

# Only inside strings can these occur in JSON text, where the escape means the same.
_ESCAPES = str.maketrans(
    {
        "<": "\\u003c",
        ">": "\\u003e",
        "&": "\\u0026",
        "\u2028": "\\u2028",
        "\u2029": "\\u2029",
    }
)


def script_json(value: Any) -> Markup:
    """``value`` as JSON text safe to place between ``<script type="application/json">``
    and ``</script>`` (or in an element's text); not for attribute values."""
    text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    return Markup(text.translate(_ESCAPES))
