"""A cheaper ``__init__`` for the frozen dataclasses built once per exported span.

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__`` (one call per
field, to get around its own ``__setattr__``): about 0.2 us a field, which for the records the store's
export thread builds per span and per trace (a span record, its normalised facts, the trace summary)
came to several us of every span. :func:`fast_init` swaps in an ``__init__`` that writes the fields
straight into the instance dict: the same parameters, defaults and errors for missing or unknown
arguments, and the same equality, hash, repr and immutability afterwards.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["fast_init"]

C = TypeVar("C", bound=type)


def fast_init(cls: C) -> C:
    """Give the frozen dataclass ``cls`` (no ``__post_init__``, no slots) a dict-filling ``__init__``.

    The ``__init__`` is generated from the class's own field names, as :mod:`dataclasses` generates its
    own (no outside text reaches the generated source).
    """
    if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__") or "__slots__" in vars(cls):
        raise TypeError(f"fast_init needs a plain frozen dataclass, not {cls.__qualname__}")
    fields = dataclasses.fields(cls)
    if any(not f.init or not f.name.isidentifier() for f in fields):
        raise TypeError(f"fast_init needs every field of {cls.__qualname__} in __init__")
    namespace: dict[str, Any] = {"_UNSET": object()}
    params, lines = [], []
    for i, f in enumerate(fields):
        if f.default is not dataclasses.MISSING:
            namespace[f"_default{i}"] = f.default
            params.append(f"{f.name}=_default{i}")
            lines.append(f"    d[{f.name!r}] = {f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"_factory{i}"] = f.default_factory
            params.append(f"{f.name}=_UNSET")
            lines.append(f"    d[{f.name!r}] = _factory{i}() if {f.name} is _UNSET else {f.name}")
        else:
            params.append(f.name)
            lines.append(f"    d[{f.name!r}] = {f.name}")
    source = f"def __init__(self, {', '.join(params)}):\n    d = self.__dict__\n" + "\n".join(lines) + "\n"
    exec(source, namespace)  # noqa: S102 - built from the dataclass's field names only
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = dict(getattr(cls.__init__, "__annotations__", {}))
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
