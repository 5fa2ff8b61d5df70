"""The fast path of :func:`replaygate.replay._bounded.load_yaml_bounded`: libyaml parses, a loop composes.

libyaml's C scanner and parser (PyYAML's ``CParser``, the engine of ``CSafeLoader``) turn the text into
events; one flat loop (no recursion) builds the same nodes PyYAML's composer builds, refusing on the way
everything the bounded loader refuses (anchors, aliases, nesting deeper than the limit, a key given twice,
more than one document); PyYAML's ``SafeConstructor`` then builds the values, so a value reads exactly as
before. Anything refused here raises :class:`NotFast`, and the caller reads the document again with the
pure-Python loader, whose messages (file:line, the same as always) are the ones users see. Without libyaml
(:data:`AVAILABLE` false) every document takes the pure-Python path.

:func:`load_fast_data` is the same path for a caller that needs only the values (a scenario whose
lines are wanted only when it is wrong): the loop builds the lists, mappings and strings itself, with no
node objects, and hands only the other scalars (numbers, dates, booleans, null, explicit tags) to
``SafeConstructor``'s own functions; a collection tagged otherwise than as a plain mapping or list
(``!!set``, ``!!omap``), and a key that is not a string (``1``, ``yes``, a merge key ``<<``, a list) take
:class:`NotFast`.
"""

from __future__ import annotations

import datetime as dt
from functools import lru_cache
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.events import (
    DocumentEndEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

try:
    from yaml._yaml import CParser
except ImportError:  # PyYAML built without libyaml
    _PARSER: Any = None
else:
    _PARSER = CParser

__all__ = ["AVAILABLE", "NotFast", "load_fast", "load_fast_data"]

AVAILABLE = _PARSER is not None


class NotFast(Exception):
    """The document needs the pure-Python loader (to be refused there with its message, or read)."""


class _Constructor(SafeConstructor, Resolver):
    """``SafeConstructor`` and the default resolver, without a parser (the nodes come from the loop)."""

    def __init__(self) -> None:
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self.current: Node | None = None

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        self.current = node  # the node being built when a constructor fails
        return super().construct_object(node, deep)


def _compose(parser: Any, resolve: Any, max_depth: int) -> Node | None:
    get = parser.get_event
    get()  # StreamStartEvent
    event = get()
    if type(event) is StreamEndEvent:
        return None
    root: Node | None = None
    stack: list[Node] = []  # open collections
    keys: list[Node | None] = []  # per open mapping: the key waiting for its value
    seen: list[set[str] | None] = []  # per open collection: the scalar keys of a mapping
    event = get()
    while True:
        kind = type(event)
        if kind is SequenceEndEvent or kind is MappingEndEvent:
            node = stack.pop()
            node.end_mark = event.end_mark
            keys.pop()
            seen.pop()
        elif kind is ScalarEvent or kind is SequenceStartEvent or kind is MappingStartEvent:
            if event.anchor is not None or len(stack) >= max_depth:
                raise NotFast
            tag = event.tag
            if kind is ScalarEvent:
                if tag is None or tag == "!":
                    tag = resolve(ScalarNode, event.value, event.implicit)
                node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
            elif kind is SequenceStartEvent:
                if tag is None or tag == "!":
                    tag = resolve(SequenceNode, None, event.implicit)
                node = SequenceNode(tag, [], event.start_mark, None, flow_style=event.flow_style)
            else:
                if tag is None or tag == "!":
                    tag = resolve(MappingNode, None, event.implicit)
                node = MappingNode(tag, [], event.start_mark, None, flow_style=event.flow_style)
            if not stack:
                root = node
            else:
                parent = stack[-1]
                if type(parent) is SequenceNode:
                    parent.value.append(node)
                else:
                    key = keys[-1]
                    if key is None:
                        if type(node) is ScalarNode:
                            names = seen[-1]
                            assert names is not None
                            if node.value in names:
                                raise NotFast  # a key given twice
                            names.add(node.value)
                        keys[-1] = node
                    else:
                        parent.value.append((key, node))
                        keys[-1] = None
            if kind is not ScalarEvent:
                stack.append(node)
                keys.append(None)
                seen.append(set() if kind is MappingStartEvent else None)
        elif kind is DocumentEndEvent:
            break
        else:  # an alias, or anything unexpected
            raise NotFast
        event = get()
    if type(get()) is not StreamEndEvent:
        raise NotFast  # more than one document
    return root


def load_fast(text: str, max_depth: int) -> tuple[Any, Node | None]:
    """Parse one YAML document with libyaml; :class:`NotFast` for anything the slow path must see."""
    if _PARSER is None or "\t" in text:  # libyaml takes tabs the pure-Python scanner refuses: it decides
        raise NotFast
    try:
        parser = _PARSER(text)
        try:
            constructor = _Constructor()
            node = _compose(parser, constructor.resolve, max_depth)
        finally:
            parser.dispose()
        data = constructor.construct_document(node) if node is not None else None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError, AttributeError):
        raise NotFast from None
    return data, node


_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_BOOLS = SafeConstructor.bool_values
_RESOLVER = Resolver()  # read only: ``resolve`` of a plain scalar reads the class's implicit resolvers
_CONSTRUCTOR = SafeConstructor()  # read only: its scalar functions read the node they are given
_NO_KEY = object()  # an open mapping waiting for its next key
#: What a value the slow path refuses (with its message) raises here (``!!bool maybe``: a KeyError).
_REFUSED = (yaml.YAMLError, LookupError, ValueError, TypeError, OverflowError, RecursionError, AttributeError)


@lru_cache(maxsize=4096)
def _plain_tag(raw: str) -> str:
    """The tag the default resolver gives a plain scalar (keys and values repeat: a pure memo)."""
    return str(_RESOLVER.resolve(ScalarNode, raw, (True, False)))  # type: ignore[no-untyped-call]


def _scalar(event: Any, tag: str) -> Any:
    """The value of a scalar whose tag is not ``str``, by SafeConstructor's own function for the tag."""
    raw = event.value
    if tag == _NULL:
        return None
    if tag == _BOOL:
        return _BOOLS[raw.lower()]
    if tag == _INT and raw.isascii() and raw.isdigit() and (raw[0] != "0" or raw == "0"):
        return int(raw)  # plain decimal (no sign, octal, hex, '_' or sexagesimal): what it reads as
    if tag == _FLOAT and raw.isascii() and raw.replace(".", "", 1).isdigit():
        return float(raw)  # digits and one point (no sign, exponent, '_', .inf or sexagesimal)
    if tag == _TIMESTAMP and len(raw) == 10 and raw[4] == "-" and raw[7] == "-":
        return dt.date(int(raw[:4]), int(raw[5:7]), int(raw[8:10]))  # YYYY-MM-DD, as SafeConstructor
    build = _CONSTRUCTOR.yaml_constructors.get(tag)
    if build is None:
        raise NotFast  # an unknown tag: the slow path says so
    return build(_CONSTRUCTOR, ScalarNode(tag, raw, event.start_mark, event.end_mark, style=event.style))


def _values(parser: Any, max_depth: int) -> Any:
    get = parser.get_event
    resolvers = Resolver.yaml_implicit_resolvers
    if None in resolvers or Resolver.yaml_path_resolvers:
        raise NotFast  # resolvers added to PyYAML: the general path applies them
    get()  # StreamStartEvent
    event = get()
    if type(event) is StreamEndEvent:
        return None
    root: Any = _NO_KEY
    stack: list[Any] = []  # open lists and dicts
    keys: list[Any] = []  # per open collection: the key waiting for its value (_NO_KEY: none yet)
    depth = 0
    event = get()
    while True:
        kind = type(event)
        if kind is ScalarEvent:
            if event.anchor is not None or depth >= max_depth:
                raise NotFast
            value: Any = event.value
            tag = event.tag
            if tag is None or tag == "!":
                if event.implicit[0] and (not value or value[0] in resolvers):
                    tag = _plain_tag(value)
                    if tag != _STR:
                        value = _scalar(event, tag)
                # else quoted, or plain with a first character no resolver takes: a string
            elif tag != _STR:
                value = _scalar(event, tag)
            if not depth:
                root = value
                event = get()
                continue
            parent = stack[-1]
            if type(parent) is list:
                parent.append(value)
            elif keys[-1] is _NO_KEY:
                # A key: a string given once. Any other key (1, yes, `=`, `<<`: merge) takes the slow
                # path, which also refuses a key text given twice (`1` and `"1"`).
                if type(value) is not str or value in parent:
                    raise NotFast
                keys[-1] = value
            else:
                parent[keys[-1]] = value
                keys[-1] = _NO_KEY
        elif kind is SequenceStartEvent or kind is MappingStartEvent:
            if event.anchor is not None or depth >= max_depth:
                raise NotFast
            tag = event.tag
            if tag is not None and tag != "!" and tag != (_SEQ if kind is SequenceStartEvent else _MAP):
                raise NotFast  # !!set, !!omap, !!pairs or an unknown tag
            value = [] if kind is SequenceStartEvent else {}
            if not depth:
                root = value
            else:
                parent = stack[-1]
                if type(parent) is list:
                    parent.append(value)
                elif keys[-1] is _NO_KEY:
                    raise NotFast  # a list or mapping as a key
                else:
                    parent[keys[-1]] = value
                    keys[-1] = _NO_KEY
            stack.append(value)
            keys.append(_NO_KEY)
            depth += 1
        elif kind is SequenceEndEvent or kind is MappingEndEvent:
            stack.pop()
            keys.pop()
            depth -= 1
        elif kind is DocumentEndEvent:
            break
        else:  # an alias, or anything unexpected
            raise NotFast
        event = get()
    if root is _NO_KEY or type(get()) is not StreamEndEvent:
        raise NotFast  # no node, or more than one document
    return root


def load_fast_data(text: str, max_depth: int) -> Any:
    """The values of one YAML document, as :func:`load_fast` gives them, without building nodes."""
    if _PARSER is None or "\t" in text:  # as in load_fast
        raise NotFast
    try:
        parser = _PARSER(text)
        try:
            return _values(parser, max_depth)
        finally:
            parser.dispose()
    except _REFUSED:
        raise NotFast from None
