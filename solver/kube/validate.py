"""Pydantic validation of a manifest (or a part of one) into the errors users read: the
first failure, named by its field path from the document's root."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from solver.errors import ManifestError
from solver.kube.loader import RawObject
from solver.kube.objects import KeyedQuantityError
from solver.kube.objects import Taint as K8sTaint
from solver.kube.objects import Toleration as K8sToleration
from solver.model import Loc, Taint, Toleration, camel_path, field_problems

__all__ = ["build", "report", "taints", "tolerations", "validate"]

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


def build(
    raw: RawObject, model: type[M], path: str, names: dict[str, str] | None = None, **fields: Any
) -> M:
    """The model's `model(**fields)`, its rules checked by the model itself (`solver.model`,
    the rules the gRPC codec applies too); the first broken one is the manifest's error at
    `path` (camelCase; `names` renames the fields whose manifest name is not that)."""
    try:
        return model(**fields)
    except ValidationError as exc:
        report(raw, field_problems(exc), path, names)
        raise AssertionError("unreachable") from None


def report(
    raw: RawObject, problems: list[tuple[Loc, str]], path: str, names: dict[str, str] | None = None
) -> None:
    """A model rule's first problem (`solver.model`), if any, as the manifest's error."""
    if problems:
        loc, words = problems[0]
        raise raw.error(words, field=camel_path(path, loc, names))


def tolerations(raw: RawObject, items: list[K8sToleration], path: str) -> tuple[Toleration, ...]:
    """`path[i]` tolerations (a pod's, a Kueue flavor's) as the model's, checked there."""
    return tuple(
        build(
            raw,
            Toleration,
            f"{path}[{i}]",
            key=t.key,
            operator=t.operator,
            value=t.value,
            effect=t.effect,
        )
        for i, t in enumerate(items)
    )


def taints(raw: RawObject, items: list[K8sTaint], path: str) -> tuple[Taint, ...]:
    """`path[i]` taints (a node's, a Kueue flavor's) as the model's, checked there."""
    return tuple(
        build(raw, Taint, f"{path}[{i}]", key=t.key, value=t.value, effect=t.effect)
        for i, t in enumerate(items)
    )
