"""Pydantic validation of a manifest (or a part of one) into the errors users read: the
first failure, named by its field path from the document's root."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from solver.errors import ManifestError
from solver.kube.loader import RawObject
from solver.kube.objects import KeyedQuantityError

__all__ = ["validate"]

M = TypeVar("M", bound=BaseModel)


def validate(model: type[M], raw: RawObject, body: Any = None, field: str = "") -> M:
    """`body` (the whole document when None) as `model`; `field` is where `body` sits."""
    try:
        return model.model_validate(raw.body if body is None else body)
    except ValidationError as exc:
        raise _error(exc, raw, field) from None


def _error(exc: ValidationError, raw: RawObject, field: str) -> ManifestError:
    err = exc.errors()[0]
    loc = [field] if field else []
    loc += [str(x) if isinstance(x, str) else f"[{x}]" for x in err["loc"]]
    ctx_error = (err.get("ctx") or {}).get("error")
    message = err["msg"].removeprefix("Value error, ")
    if isinstance(ctx_error, KeyedQuantityError):
        loc.append(ctx_error.key)
        message = str(ctx_error)
    if err["type"] == "missing":
        message = "missing required field"
    elif err["type"] in ("model_type", "dict_type"):
        message = "must be a mapping"  # not pydantic's class name
    path = ".".join(loc).replace(".[", "[")
    return raw.error(message, field=path or None)
