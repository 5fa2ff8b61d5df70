"""The fast path of :func:`replaygate.replay._bounded.load_yaml_bounded`: libyaml parses, a loop composes.

libyaml's C scanner and parser (PyYAML's ``CParser``, the engine of ``CSafeLoader``) turn the text into
events; one flat loop (no recursion) builds the same nodes PyYAML's composer builds, refusing on the way
everything the bounded loader refuses (anchors, aliases, nesting deeper than the limit, a key given twice,
more than one document); PyYAML's ``SafeConstructor`` then builds the values, so a value reads exactly as
before. Anything refused here raises :class:`NotFast`, and the caller reads the document again with the
pure-Python loader, whose messages (file:line, the same as always) are the ones users see. Without libyaml
(:data:`AVAILABLE` false) every document takes the pure-Python path.
"""

from __future__ import annotations

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

__all__ = ["AVAILABLE", "NotFast", "load_fast"]

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
    if _PARSER is None:
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
