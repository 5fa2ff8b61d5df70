"""Reading and writing scenario YAML files: errors with file:line, stable dumps, atomic saves, hashes."""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any, Protocol

import yaml
from pydantic import ValidationError
from replaygate.replay._bounded import load_yaml_bounded, load_yaml_data
from replaygate.replay._errors import ScenarioError
from replaygate.replay._runfile import content_hash, save_atomic, write_atomic
from replaygate.replay._scenario_forms import check_entry, error_hint, mark_forms, normalise_checks
from replaygate.replay._scenario_model import Scenario

__all__ = [
    "PASS_CONDITION_FIELDS",
    "SCENARIO_SUFFIXES",
    "dump_scenario",
    "load_scenario",
    "load_scenarios",
    "parse_scenario",
    "parse_scenario_file",
    "save_scenario",
    "scenario_content_hash",
    "scenario_file_names",
    "scenario_files",
    "suite_hash",
    "suite_hash_of",
    "write_atomic",
]

#: The fields whose change changes what "pass" means (hashed into the content hash).
PASS_CONDITION_FIELDS = (
    "checks",
    "judges",
    "turns",
    "context",
    "retrieval",
    "threshold",
    "repeats",
    "must_pass",
    "allow_empty",
    "followups",
)
SCENARIO_SUFFIXES = (".yaml", ".yml")


class _ParseCache(Protocol):
    """What :func:`load_scenarios` needs of a cache (``replaygate.replay.ScenarioCache`` is the one)."""

    def parse(self, path: str | os.PathLike[str], raw: bytes) -> Scenario:
        """The scenario of the file ``path`` whose bytes are ``raw`` (raises ``ScenarioError``)."""
        ...

    def save(self) -> bool:
        """Write what was parsed; whether it was written."""
        ...


_MAX_BYTES = 1_000_000
_Path = tuple[str | int, ...]


class _Marks:
    """Map a path of keys and indexes in the YAML document to the line where it starts."""

    def __init__(self) -> None:
        self.nodes: dict[_Path, yaml.Node] = {}
        self.keys: dict[_Path, yaml.Node] = {}
        self.duplicates: list[tuple[str, int]] = []
        self.aliases: list[int] = []
        self._seen: set[int] = set()

    def walk(self, node: yaml.Node, path: _Path = (), depth: int = 0) -> None:
        self.nodes[path] = node
        if isinstance(node, yaml.CollectionNode):
            if id(node) in self._seen:  # an alias (*name) to a collection seen before
                self.aliases.append(node.start_mark.line + 1)
                return
            self._seen.add(id(node))
        if depth > 50:
            return
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else repr(key_node)
                if key in seen and key != "<<":
                    self.duplicates.append((key, key_node.start_mark.line + 1))
                seen.add(key)
                self.keys[path + (key,)] = key_node
                self.walk(value_node, path + (key,), depth + 1)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self.walk(item, path + (index,), depth + 1)

    def key_line(self, loc: tuple[str | int, ...]) -> int:
        """The line of the key at ``loc`` when it is a key, else as :meth:`line`."""
        key = self.keys.get(loc)
        return key.start_mark.line + 1 if key is not None else self.line(loc)

    def line(self, loc: Iterable[Any]) -> int:
        """The 1-based line of the deepest node found along ``loc`` (pydantic union tags are skipped)."""
        path: _Path = ()
        best = self.nodes.get((), None)
        line = best.start_mark.line + 1 if best is not None else 1
        for item in loc:
            candidate = path + (item if isinstance(item, int) else str(item),)
            if candidate in self.nodes:
                path = candidate
                line = self.nodes[path].start_mark.line + 1
            elif candidate in self.keys:
                path = candidate
                line = self.keys[path].start_mark.line + 1
        return line


def _what_to_do(error: Any) -> str:
    kind = error.get("type", "")
    if kind == "extra_forbidden":
        return "remove it or fix its spelling (unknown keys are not allowed)"
    if kind == "missing":
        return "add it"
    if kind == "union_tag_invalid":
        return "use one of the listed types"
    if kind == "value_error":
        return ""
    return "fix the value"


def _format_loc(loc: Iterable[Any]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts) or "(document)"


def parse_scenario(text: str, source: str = "<string>", expected_id: str | None = None) -> Scenario:
    """Parse one scenario from YAML text; every problem raises :class:`ScenarioError` with file:line.

    Args:
        text: the YAML document.
        source: the file name used in error messages.
        expected_id: when given, the scenario's ``id`` must equal it (the file stem).
    """
    data = load_yaml_data(text, source, ScenarioError)  # no aliases, bounded depth
    if isinstance(data, dict):
        valid = _valid_scenario(data, expected_id)
        if valid is not None:
            return valid  # the common case: nothing to locate, so no nodes and no walk over them
    data, node = load_yaml_bounded(text, source, ScenarioError)  # again, with the nodes that hold the lines
    if node is None or data is None:
        raise ScenarioError(f"{source}:1: empty scenario file; write a scenario mapping (id, title, ...)")
    if not isinstance(data, dict):
        raise ScenarioError(
            f"{source}:1: a scenario is a YAML mapping (id, title, turns, ...), not a {type(data).__name__}"
        )
    marks = _Marks()
    marks.walk(node)
    if marks.aliases:
        raise ScenarioError(
            f"{source}:{marks.aliases[0]}: YAML anchors and aliases (&name, *name) are not allowed in "
            "scenarios; write the value out"
        )
    if marks.duplicates:
        key, line = marks.duplicates[0]
        raise ScenarioError(f"{source}:{line}: key {key!r} appears twice; keep one")
    data, forms, found = normalise_checks(data)
    problems = [f"{source}:{marks.key_line(loc)}: {_format_loc(loc)}: {msg}" for loc, msg in found]
    said = {loc[:2] if loc[0] == "checks" else loc for loc, _ in found}  # a whole check, or a key
    try:
        scenario = mark_forms(Scenario.model_validate(data), forms)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            loc = error.get("loc", ())
            if any(tuple(loc[: len(where)]) == where for where in said):
                continue  # already said, with a did-you-mean
            msg = str(error.get("msg", "invalid")).removeprefix("Value error, ")
            todo = error_hint(error) or _what_to_do(error)
            problems.append(
                f"{source}:{marks.line(loc)}: {_format_loc(loc)}: {msg}" + (f"; {todo}" if todo else "")
            )
    except (RecursionError, MemoryError):
        raise ScenarioError(f"{source}:1: scenario nested too deeply; flatten it") from None
    if problems:
        raise ScenarioError("\n".join(problems))
    if expected_id is not None and scenario.id != expected_id:
        raise ScenarioError(
            f"{source}:{marks.line(('id',))}: id {scenario.id!r} differs from the file name {expected_id!r}; "
            f"rename the file or change the id"
        )
    return scenario


def _valid_scenario(data: dict[str, Any], expected_id: str | None) -> Scenario | None:
    """The scenario when ``data`` is one without any problem, else None (the caller says what is wrong)."""
    normal, forms, found = normalise_checks(data)
    if found:
        return None
    try:
        scenario = mark_forms(Scenario.model_validate(normal), forms)
    except (ValidationError, RecursionError, MemoryError):
        return None
    if expected_id is not None and scenario.id != expected_id:
        return None
    return scenario


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Load one scenario file; its ``id`` must equal the file stem. Errors are :class:`ScenarioError`."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"{p}: cannot read the scenario file ({exc.strerror or exc})") from None
    return parse_scenario_file(p, raw)


def parse_scenario_file(path: str | os.PathLike[str], raw: bytes) -> Scenario:
    """:func:`load_scenario` of a file's bytes already read (for a caller that also hashes them)."""
    p = Path(path)
    if len(raw) > _MAX_BYTES:
        raise ScenarioError(f"{p}:1: scenario file larger than {_MAX_BYTES} bytes; split or shorten it")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{p}:1: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    return parse_scenario(text, source=str(p), expected_id=p.stem)


def scenario_files(directory: str | os.PathLike[str]) -> list[Path]:
    """The scenario files of a golden set: ``*.yaml``/``*.yml`` below it, hidden files excluded."""
    return [Path(path) for path in scenario_file_names(directory)]


def scenario_file_names(directory: str | os.PathLike[str]) -> list[str]:
    """:func:`scenario_files` as the strings ``os.scandir`` gives (no ``Path`` made per file)."""
    found: list[tuple[tuple[str, ...], str]] = []  # (parts below the root, path): sorted as Paths sort
    folders: list[tuple[tuple[str, ...], str]] = [((), os.fspath(directory))]
    while folders:  # like rglob: symlinked folders are not entered, unreadable ones are skipped
        parts, folder = folders.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    name = entry.name
                    if name.startswith("."):
                        continue
                    try:
                        if entry.is_dir():
                            if not entry.is_symlink():
                                folders.append(((*parts, name), entry.path))
                        elif os.path.splitext(name)[1] in SCENARIO_SUFFIXES and entry.is_file():
                            found.append(((*parts, name), entry.path))
                    except OSError:
                        continue
        except OSError:
            continue
    found.sort()
    return [path for _, path in found]


def load_scenarios(
    directory: str | os.PathLike[str], skip: Collection[Path] = (), cache: _ParseCache | None = None
) -> list[Scenario]:
    """Load every scenario of a golden set, sorted by id; all problems are reported in one error.

    ``skip``: files not to read (a caller that knows from an index they are not wanted). ``cache``: a
    :class:`~replaygate.replay.ScenarioCache` unchanged files are read from (and that is saved after).
    """
    root = Path(directory)
    if not root.is_dir():
        raise ScenarioError(f"{root}: no such golden-set directory; create it or pass the right --golden")
    scenarios: list[Scenario] = []
    problems: list[str] = []
    where: dict[str, Path] = {}
    for f in scenario_files(root):
        if f in skip:
            continue
        try:
            scenario = load_scenario(f) if cache is None else _load_cached(f, cache)
        except ScenarioError as exc:
            problems.append(str(exc))
            continue
        if scenario.id in where:
            problems.append(f"{f}:1: id {scenario.id!r} is also used by {where[scenario.id]}; ids are unique")
            continue
        where[scenario.id] = f
        scenarios.append(scenario)
    if cache is not None:
        cache.save()
    if problems:
        raise ScenarioError("\n".join(problems))
    return sorted(scenarios, key=lambda s: s.id)


def _load_cached(path: Path, cache: _ParseCache) -> Scenario:
    try:
        raw = path.read_bytes()
    except OSError:
        return load_scenario(path)  # says what is wrong, as without a cache
    return cache.parse(path, raw)


class _Dumper(yaml.SafeDumper):
    """Block style for multi-line strings, everything else as safe_dump does."""


_LINE_BREAKS = ("\r", "\x85", "\u2028", "\u2029")


def _plain_lines(value: str) -> bool:
    """Whether a multi-line string survives a literal block unchanged (no edge whitespace to chomp)."""
    body = value[:-1] if value.endswith("\n") else value
    lines = body.split("\n")
    return bool(body) and not body.endswith("\n") and all(line == line.strip() for line in lines)


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if any(ch in value for ch in _LINE_BREAKS) or not all(ch.isprintable() or ch == "\n" for ch in value):
        # YAML would fold or normalise these characters: write them escaped in double quotes.
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    if "\n" in value and _plain_lines(value):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str_representer)


def _yaml(data: Any, flow: bool | None) -> str:
    text = yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=flow,
        width=10**9 if flow else 110,
    )
    return text.removesuffix("...\n")


def _check_line(item: Any) -> str:
    entry = check_entry(item)
    text = _yaml(entry, True).strip()
    # A shorthand is written as the file wrote it: `- max_chars: 80`, not `- {max_chars: 80}`.
    return text if "type" in entry else text[1:-1]


def dump_scenario(scenario: Scenario) -> str:
    """Return stable YAML for a scenario (field order of the model; loads back to an equal scenario).

    Checks, judges and changelog entries are written one per line; check parameters equal to their
    defaults are left out.
    """
    data = scenario.model_dump(mode="python", by_alias=True, exclude_none=True)
    lists: dict[str, list[str]] = {
        "checks": [_check_line(c) for c in scenario.checks],
        "judges": [
            _yaml({"type": j.type, **j.model_dump(mode="python")}, True).strip() for j in scenario.judges
        ],
        "changelog": [_yaml(e.model_dump(mode="python"), True).strip() for e in scenario.changelog],
    }
    parts: list[str] = []
    for key, value in data.items():
        if key in lists:
            if not lists[key]:
                parts.append(f"{key}: []\n")
                continue
            parts.append(f"{key}:\n")
            parts.extend(f"  - {line}\n" for line in lists[key])
        elif key == "turns":
            parts.append(_yaml({key: value}, False))
        elif isinstance(value, dict | list) and value:
            flow = f"{key}: {_yaml(value, True).strip()}\n"
            parts.append(flow if len(flow) <= 100 and "\n" not in flow[:-1] else _yaml({key: value}, False))
        else:
            parts.append(_yaml({key: value}, False))
    return "".join(parts)


def save_scenario(scenario: Scenario, directory: str | os.PathLike[str]) -> Path:
    """Write ``<directory>/<id>.yaml`` atomically (temporary file, fsync, rename); return the path."""
    return save_atomic(Path(directory) / f"{scenario.id}.yaml", dump_scenario(scenario))


_PASS_CONDITION: set[str] = set(PASS_CONDITION_FIELDS)  # read only


def scenario_content_hash(scenario: Scenario) -> str:
    """Hash of the pass condition (checks, judges, turns, context, retrieval, threshold, repeats, ...)."""
    data = scenario.model_dump(mode="json", by_alias=True, include=_PASS_CONDITION)
    # Fields added later hash only when set, so the scenarios written before them keep their hashes.
    if data.get("followups") is None:
        data.pop("followups", None)
    for check in data.get("checks", []):
        if check.get("turn") == "last":
            del check["turn"]
    return content_hash(data)


def suite_hash(scenarios: Iterable[Scenario]) -> str:
    """Hash of a suite: each scenario's id, status and content hash, in id order."""
    return suite_hash_of((s.id, s.status.state, scenario_content_hash(s)) for s in scenarios)


def suite_hash_of(entries: Iterable[tuple[str, str, str]]) -> str:
    """:func:`suite_hash` from ``(id, status, content hash)`` triples already computed."""
    return content_hash([list(e) for e in sorted(entries)])
