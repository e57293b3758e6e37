"""The one base of every model type: immutable, and strict about unknown fields."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict

__all__ = ["Frozen"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def replaced(self, **changes: Any) -> Self:
        """A shallow copy with `changes` (values already of their fields' types: nothing is
        validated), as pydantic's own `__copy__` makes it: a third of `model_copy(update=)`'s
        cost, which counts where a call's pods are copies of one template under new names."""
        cls = type(self)
        new = cls.__new__(cls)
        object.__setattr__(new, "__dict__", {**self.__dict__, **changes})
        object.__setattr__(new, "__pydantic_extra__", None)
        object.__setattr__(
            new, "__pydantic_fields_set__", self.__pydantic_fields_set__ | changes.keys()
        )
        object.__setattr__(new, "__pydantic_private__", None)
        return new
