"""The package's layout stays as README's layout section draws it.

Read from the source, not imported: every ``import`` and ``from ... import`` statement of every
module under ``ragnb/`` (function-level imports included) is checked against the layers

    foundations -> measures, evaluate, stats -> backends -> studies -> delivery

A module may import its own layer or a lower one; no study imports another study. Modules meet
through public names: no module imports a private name (``_name``) or a private module of another,
and no two modules import each other, directly or around a loop. Functions stay short enough to
read in one screen.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ragnb"

#: Layer of each top-level module or package of ragnb (lower imports nothing higher).
LAYERS: dict[str, int] = {
    # foundations: errors, validation, files, frames, caches, transport, prices, provenance
    "errors": 0,
    "validation": 0,
    "provenance": 0,
    "io": 0,
    "readers": 0,
    "frames": 0,
    "engine": 0,
    "groupsort": 0,
    "paths": 0,
    "cache": 0,
    "transport": 0,
    "prices": 0,
    "ledger": 0,
    "params": 0,
    "tables": 0,
    "charts": 0,
    "docstrings": 0,
    "lazylibs": 0,
    "protocol": 0,
    "traces": 0,
    # measures and what computes with them
    "measures": 1,
    "evaluate": 1,
    "streaming": 1,
    "stats": 1,
    "interop": 1,
    "fusion": 1,
    "gates": 1,
    "ppi": 1,
    "trec_eval": 1,
    # backends
    "embed": 2,
    "retrieve": 2,
    "rerank": 2,
    "judge": 2,
    "llm": 2,
    "rewrite": 2,
    "context": 2,
    # studies (one package per notebook)
    "retrieval": 3,
    "golden": 3,
    "diagnostics": 3,
    "clq": 3,
    "correlation": 3,
    "whatif": 3,
    # delivery
    "report": 4,
    "cli": 4,
    "sample_data": 4,
    "studies": 4,
    "widgets": 4,
    "__init__": 4,
}
STUDIES = {name for name, layer in LAYERS.items() if layer == 3}

MAX_FUNCTION_LINES = 120


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _top(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


def _imported(tree: ast.AST, path: Path) -> set[str]:
    """Top-level ragnb modules imported anywhere in the module (absolute or relative)."""
    out: set[str] = set()
    rel_parts = path.relative_to(PACKAGE).with_suffix("").parts
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "ragnb" and len(parts) > 1:
                    out.add(parts[1])
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                base = list(rel_parts[: len(rel_parts) - node.level])
                parts = base + (node.module.split(".") if node.module else [])
                if parts:
                    out.add(parts[0])
                else:
                    out.update(a.name for a in node.names)
            elif node.module and node.module.split(".")[0] == "ragnb":
                parts = node.module.split(".")
                if len(parts) > 1:
                    out.add(parts[1])
                else:  # from ragnb import x
                    out.update(a.name for a in node.names)
    return out


def test_every_module_has_a_layer() -> None:
    unknown = sorted({_top(p) for p in _modules()} - set(LAYERS))
    assert not unknown, f"modules without a layer in tests/test_layout.py: {unknown}"


def test_imports_flow_down_and_no_study_imports_another() -> None:
    bad = []
    for path in _modules():
        me = _top(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for other in sorted(_imported(tree, path)):
            if other == me or other not in LAYERS or other == "__version__":
                continue
            if me in STUDIES and other in STUDIES:
                bad.append(f"{path.relative_to(PACKAGE)}: study {me} imports study {other}")
            elif LAYERS[other] > LAYERS[me]:
                bad.append(
                    f"{path.relative_to(PACKAGE)}: {me} (layer {LAYERS[me]}) imports "
                    f"{other} (layer {LAYERS[other]})"
                )
    assert not bad, "imports against the layers:\n" + "\n".join(bad)


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def test_no_function_over_the_line_budget() -> None:
    long = []
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in _functions(tree):
            n = (fn.end_lineno or fn.lineno) - fn.lineno + 1
            if n > MAX_FUNCTION_LINES:
                long.append(f"{path.relative_to(PACKAGE)}:{fn.lineno} {fn.name} ({n} lines)")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from ragnb.golden import study", {"golden"}),
        ("import ragnb.clq.sweep", {"clq"}),
        ("from ragnb import charts, tables", {"charts", "tables"}),
        ("def f():\n    from ragnb.retrieval.study import x", {"retrieval"}),
    ],
)
def test_the_import_reader_sees_every_form(source: str, expected: set[str]) -> None:
    # the checks above are only as good as this reader: lazy imports inside functions count
    assert _imported(ast.parse(source), PACKAGE / "x.py") == expected


# ------------------------------------------------------------------ seams: public names, no cycle


def _module_name(path: Path) -> str:
    """Dotted name of a module file (a package is its ``__init__``)."""
    parts = ("ragnb", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_targets(tree: ast.AST, name: str, is_package: bool) -> Iterator[tuple[str, str | None]]:
    """``(module, imported name or None)`` of every ragnb import of a module, relative ones
    resolved; ``import ragnb.x.y`` gives ``("ragnb.x.y", None)``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "ragnb":
                    yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([module] if module else []))
            if module.split(".")[0] == "ragnb":
                for alias in node.names:
                    yield module, alias.name


def _is_private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def _private_imports(tree: ast.AST, name: str, is_package: bool) -> list[str]:
    """Imports of a private name, or of anything from a private module, of another module."""
    bad = []
    for module, imported in _import_targets(tree, name, is_package):
        parts = module.split(".") + ([imported] if imported else [])
        if module != name and any(_is_private(p) for p in parts):
            bad.append(module + (f" import {imported}" if imported else ""))
    return bad


def test_no_module_imports_a_private_name_of_another() -> None:
    bad = []
    for path in _modules():
        name = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for what in _private_imports(tree, name, path.name == "__init__.py"):
            bad.append(f"{path.relative_to(PACKAGE)}: from {what}")
    assert not bad, "imports of private names across modules:\n" + "\n".join(bad)


def _import_graph() -> dict[str, set[str]]:
    """Module -> the ragnb modules it imports (``from pkg import mod`` is an edge to ``pkg.mod``,
    ``from pkg import name`` one to ``pkg``), lazy and type-checking imports included."""
    paths = {_module_name(p): p for p in _modules()}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        edges = graph.setdefault(name, set())
        for module, imported in _import_targets(tree, name, path.name == "__init__.py"):
            full = f"{module}.{imported}" if imported else module
            target = full if full in paths else module
            if target in paths and target != name:
                edges.add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_no_import_cycle() -> None:
    cycles = _cycles(_import_graph())
    assert not cycles, "modules that import each other:\n" + "\n".join(map(str, cycles))


@pytest.mark.parametrize(
    ("source", "name", "expected"),
    [
        (
            "from ragnb.evaluate import _tables",
            "ragnb.streaming",
            ["ragnb.evaluate import _tables"],
        ),
        ("from ragnb.measures import _kernel", "ragnb.evaluate", ["ragnb.measures import _kernel"]),
        (
            "from ragnb.stats._paired import x",
            "ragnb.stats.bootstrap",
            ["ragnb.stats._paired import x"],
        ),
        ("from ._paired import x", "ragnb.stats.bootstrap", ["ragnb.stats._paired import x"]),
        ("def f():\n    from ragnb.io import _open", "ragnb.x", ["ragnb.io import _open"]),
        ("import ragnb._groupsort", "ragnb.frames", ["ragnb._groupsort"]),
        ("from ragnb import __version__", "ragnb.cli", []),
        ("from ragnb.engine import sort_run", "ragnb.io", []),
    ],
)
def test_the_private_import_reader_sees_every_form(source: str, name: str, expected: list) -> None:
    assert _private_imports(ast.parse(source), name, False) == expected


def test_the_cycle_finder_finds_loops_and_only_loops() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e2"}, "e2": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
