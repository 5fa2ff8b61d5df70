"""``replaced(model, values)``: ``model.model_copy(update=values)`` for the runner's hot path, cheaper.

A frozen model of the run file (``extra="forbid"``, no private attributes) is copied by giving a new
instance the old one's field values with ``values`` put over them, and the fields set plus the keys of
``values``: what ``model_copy`` makes (no validation, as there), without its generic steps (``copy`` of
each of the model's four slots, the extra and private look-ups).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["made", "plain", "replaced"]

M = TypeVar("M", bound=BaseModel)

_set = object.__setattr__
_new = object.__new__


def replaced(model: M, values: Mapping[str, Any]) -> M:
    """A shallow copy of ``model`` with ``values`` over its fields (``model_copy(update=values)``)."""
    if not plain(model):
        return model.model_copy(update=values)  # not a plain run-file model: the general path
    fields = model.__dict__.copy()
    fields.update(values)
    fields_set = model.__pydantic_fields_set__.copy()
    fields_set.update(values)
    return made(type(model), fields, fields_set)


def plain(model: BaseModel) -> bool:
    """Whether ``model`` has no extra and no private attributes (:func:`made` can copy it)."""
    return model.__pydantic_extra__ is None and getattr(model, "__pydantic_private__", None) is None


def made(cls: type[M], fields: dict[str, Any], fields_set: set[str]) -> M:
    """A plain run-file model of ``cls`` with these field values and fields set, not validated.

    For values taken from a model of the same class (as :func:`replaced` does): no extra, no private.
    """
    new = _new(cls)
    _set(new, "__dict__", fields)
    _set(new, "__pydantic_extra__", None)
    _set(new, "__pydantic_fields_set__", fields_set)
    _set(new, "__pydantic_private__", None)
    return new
