"""The seams between the parts, read from the source with ``ast`` (every import, function-local ones too).

- No module outside ``replaygate/<part>/`` imports ``replaygate.<part>._private`` (what another part
  needs, the owning part exports from its ``__init__``); tests under ``tests/<part>/`` may read their own
  part's private modules (white-box tests), nothing else may.
- No import cycle among the modules of a part, counting imports inside functions and ``TYPE_CHECKING``
  blocks: a cycle is broken by moving the shared piece down, not hidden behind a late import.
- Dependencies point one way: instrumentation ◀ replay ◀ the control plane.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE_ROOTS = ("instrumentation/src", "replay/src", "src")
OTHER_TREES = ("examples", "bench", "tests")


@dataclass(frozen=True)
class Module:
    path: Path
    name: str  # dotted name (``replaygate.replay._runner``; ``tests.replay.test_runner``)
    is_package: bool  # an ``__init__.py``


@dataclass(frozen=True)
class Import:
    line: int
    target: str  # the module the statement makes Python import


def modules() -> list[Module]:
    found: list[Module] = []
    for base in SOURCE_ROOTS:
        for path in sorted((ROOT / base).rglob("*.py")):
            parts = list(path.relative_to(ROOT / base).with_suffix("").parts)
            package = parts[-1] == "__init__"
            found.append(Module(path, ".".join(parts[:-1] if package else parts), package))
    for tree in OTHER_TREES:
        for path in sorted((ROOT / tree).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            package = parts[-1] == "__init__"
            found.append(Module(path, ".".join(parts[:-1] if package else parts), package))
    return found


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def imports_of(source: str, module: Module) -> Iterator[Import]:
    """Every module ``source`` loads: ``import`` statements anywhere (``from p import m``: ``p.m``) and
    ``importlib.import_module("literal")`` calls."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and (
            isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            or isinstance(node.func, ast.Name)
            and node.func.id == "import_module"
        ):
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                yield Import(node.lineno, node.args[0].value)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.name if module.is_package else module.name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            for alias in node.names:  # a submodule, or a name defined by the module ``base``
                candidate = f"{base}.{alias.name}"
                yield Import(node.lineno, candidate if _is_module(candidate) else base)


def part_of(name: str) -> str | None:
    """``replaygate.<part>`` for a module of that part, None outside the parts (examples, bench, tests)."""
    segments = name.split(".")
    if segments[0] == "replaygate" and len(segments) >= 2:
        return ".".join(segments[:2])
    return None


# White-box tests that reach into another part's internals on purpose, with why (a new one fails).
WHITE_BOX = {
    ("tests/canary/test_cli_canary.py", "replaygate.cli"): "injects a controller with a fake clock",
    ("tests/canary/test_outlook.py", "replaygate.cli"): "injects a controller with a fake clock",
    ("tests/canary/test_simulate.py", "replaygate.instrumentation"): "resets the process's routing client",
    ("tests/instrumentation/test_cli_traces.py", "replaygate.cli"): "pins the traces commands' module",
    ("tests/test_cli_options.py", "replaygate.cli"): "walks every command's shared options",
    ("tests/replay/test_runner_capture.py", "replaygate.instrumentation"): "reads the capture routes",
    ("tests/collect/test_end_to_end_postgres.py", "replaygate.web"): "closes the page's canary controller",
    ("tests/golden/test_index.py", "replaygate.replay"): "counts the files the loader parses",
    ("bench/suite_scale.py", "replaygate.replay"): "times the pure-Python loader beside libyaml",
    ("bench/suite_scale.py", "replaygate.cli"): "times the gate and run commands' stages in-process",
}


def may_read_private_of(module: Module) -> str | None:
    """The part whose private modules ``module`` may import: its own, or the one its test folder mirrors."""
    own = part_of(module.name)
    if own is not None:
        return own
    segments = module.name.split(".")
    if segments[0] == "tests" and len(segments) >= 3:
        return f"replaygate.{segments[1]}"
    return None


def private_target(target: str) -> str | None:
    """The part whose private module ``target`` is (``replaygate.replay._runner``: ``replaygate.replay``)."""
    segments = target.split(".")
    if segments[0] != "replaygate" or len(segments) < 3:
        return None
    if any(s.startswith("_") and not s.startswith("__") for s in segments[2:]):
        return ".".join(segments[:2])
    return None


def private_imports(module: Module, source: str) -> list[str]:
    allowed = may_read_private_of(module)
    found = []
    for imp in imports_of(source, module):
        owner = private_target(imp.target)
        where = module.path.relative_to(ROOT).as_posix() if module.path.is_relative_to(ROOT) else ""
        if owner is not None and owner != allowed and (where, owner) not in WHITE_BOX:
            found.append(f"{module.path.relative_to(ROOT)}:{imp.line}: {imp.target}")
    return sorted(set(found))


def test_no_module_imports_another_parts_private_modules() -> None:
    problems = [p for m in modules() for p in private_imports(m, m.path.read_text(encoding="utf-8"))]
    assert not problems, "import what another part exports from its __init__:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("name", "source", "flagged"),
    [
        ("replaygate.cli._run", "from replaygate.replay._runner import run_suite", True),
        ("replaygate.cli._run", "def f():\n    from replaygate.instrumentation import _state", True),
        ("replaygate.gate._rules", "import replaygate.replay._runfile as rf", True),
        ("replaygate.cli._run", "from replaygate.replay import run_suite", False),
        ("replaygate.replay._runner", "from replaygate.replay._runfile import RunFile", False),
        ("tests.replay.test_runner", "from replaygate.replay._runner import run_suite", False),
        ("tests.gate.test_rules", "from replaygate.replay._runfile import RunFile", True),
        ("examples.demo", "from replaygate.golden._promote import promote", True),
        ("replaygate.cli._main", "from replaygate.instrumentation import __version__", False),
    ],
)
def test_the_private_import_rule_flags_what_it_should(name: str, source: str, flagged: bool) -> None:
    module = Module(ROOT / (name.replace(".", "/") + ".py"), name, False)
    assert bool(private_imports(module, source)) is flagged


def import_graph(part: str) -> dict[str, set[str]]:
    """Module -> the modules of the same part it imports (a package's ``__init__`` is the part's name)."""
    members = {m.name: m for m in modules() if part_of(m.name) == part}
    graph: dict[str, set[str]] = {}
    for name, module in members.items():
        edges = set()
        for imp in imports_of(module.path.read_text(encoding="utf-8"), module):
            target = imp.target
            while target and target not in members:  # ``from p.m import f.g``: the module part of it
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


PARTS = sorted({p for m in modules() if (p := part_of(m.name)) is not None})


@pytest.mark.parametrize("part", PARTS)
def test_no_import_cycle_among_the_modules_of_a_part(part: str) -> None:
    found = cycles(import_graph(part))
    assert not found, f"import cycles in {part} (move the shared piece down): {found}"


def test_the_cycle_finder_finds_a_cycle_through_a_late_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    late = Module(ROOT / "x.py", "replaygate.replay._x", False)
    source = "def f():\n    from replaygate.replay._y import g\n"
    assert [i.target for i in imports_of(source, late)] == ["replaygate.replay._y"]
    dynamic = "def f():\n    importlib.import_module('replaygate.replay._judges')\n"
    assert [i.target for i in imports_of(dynamic, late)] == ["replaygate.replay._judges"]


LAYERS = {"replaygate.instrumentation": 0, "replaygate.replay": 1}  # the control plane's packages: 2


def test_dependencies_point_one_way() -> None:
    wrong = []
    for module in modules():
        own = part_of(module.name)
        if own is None:
            continue
        for imp in imports_of(module.path.read_text(encoding="utf-8"), module):
            other = part_of(imp.target)
            if other is not None and LAYERS.get(other, 2) > LAYERS.get(own, 2):
                wrong.append(f"{module.path.relative_to(ROOT)}:{imp.line}: {own} imports {imp.target}")
    assert not wrong, "\n".join(wrong)


def test_package_docstrings_teach_the_public_import() -> None:
    wrong = []
    for module in modules():
        if module.is_package and part_of(module.name) is not None:
            doc = ast.get_docstring(ast.parse(module.path.read_text(encoding="utf-8"))) or ""
            wrong += [f"{module.name}: {m}" for m in re.findall(r"replaygate\.\w+\._\w+", doc)]
    assert not wrong, wrong
