"""Response models read from ORM rows and dataclasses by field name."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


def validated_from(model: type[M], source: object, /, **given: Any) -> M:
    """``model`` validated from ``source``'s attributes of the same names as its fields
    (as pydantic's ``from_attributes`` reads them; one it lacks is an AttributeError),
    except the fields in ``given`` (the renamed, converted, nested or derived ones), which
    take the values given. Pydantic has no way to add given values to what it reads
    from attributes, hence this.

    So a response model's field list exists once, in the model: a field it adds is read
    from the row without naming it a second time."""
    read = {name: getattr(source, name) for name in model.model_fields if name not in given}
    return model.model_validate(read | given)
