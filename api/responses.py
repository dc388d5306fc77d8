"""Fast JSON answers for large response models."""

from __future__ import annotations

from fastapi import Response
from pydantic import BaseModel


def model_json(model: BaseModel) -> Response:
    """Serialize with pydantic's own JSON encoder in one pass.

    Returning a model makes FastAPI validate it again, turn it into Python dicts and
    run json.dumps; for a 60 KB job portrait that doubled the request's CPU time. The
    route's ``response_model`` still documents the schema.
    """
    return Response(content=model.model_dump_json(), media_type="application/json")
