"""What import-linter's contracts (``pyproject.toml``, run by ``make lint``) cannot say.

The folders are the layers and import-linter checks that imports flow down them. Read from the
source here: at most three modules stand loose at the top of ``ragnb/``; the layers contract names
every package; modules meet through public names (no module imports a private name or a private
module of another); no import circle, package ``__init__`` files included; every exception class
derives from :class:`ragnb.errors.RagnbError`; every name the API reference lists imports; and
functions stay short enough to read in one screen.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

import ragnb
from ragnb.errors import RagnbError

PACKAGE = Path(__file__).resolve().parents[1] / "ragnb"

MAX_FUNCTION_LINES = 120
ROOT = PACKAGE.parent
#: The modules that may stand loose at the top of the package.
LOOSE = {"__init__", "__main__", "errors"}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_at_most_three_modules_stand_loose_at_the_top() -> None:
    loose = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert len(loose) <= 3 and set(loose) <= LOOSE, loose


def _contracts() -> list[dict]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["tool"]["importlinter"]["contracts"]


def test_the_layers_contract_names_every_package() -> None:
    (layers,) = [c for c in _contracts() if c["type"] == "layers"]
    named = {m.strip() for layer in layers["layers"] for m in layer.replace(":", "|").split("|")}
    packages = {f"ragnb.{p.stem}" for p in PACKAGE.glob("*.py") if p.stem not in LOOSE - {"errors"}}
    packages |= {f"ragnb.{p.name}" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert named == packages, (sorted(packages - named), sorted(named - packages))


def test_the_study_independence_contract_names_every_study() -> None:
    (contract,) = [c for c in _contracts() if c["type"] == "independence"]
    studies = {
        f"ragnb.studies.{p.name}"
        for p in (PACKAGE / "studies").iterdir()
        if (p / "__init__.py").is_file()
    }
    assert set(contract["modules"]) == studies


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


def _edges(tree: ast.AST, name: str, is_package: bool, modules: set[str]) -> set[str]:
    """The modules a module imports, as a reader counts them: ``from x import y`` is an edge to
    ``x`` and, when ``y`` is a module, to ``x.y`` too; ``import x.y`` one to ``x.y``. Lazy and
    type-checking imports count."""
    edges = set()
    for module, imported in _import_targets(tree, name, is_package):
        edges.add(module)
        if imported and f"{module}.{imported}" in modules:
            edges.add(f"{module}.{imported}")
    return {e for e in edges if e in modules and e != name}


def _import_graph() -> dict[str, set[str]]:
    """Module -> the ragnb modules it imports (:func:`_edges`), package ``__init__`` files
    included as the package's own module."""
    paths = {_module_name(p): p for p in _modules()}
    return {
        name: _edges(
            ast.parse(path.read_text(encoding="utf-8")),
            name,
            path.name == "__init__.py",
            set(paths),
        )
        for name, path in paths.items()
    }


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


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "from ragnb.studies.golden import study",
            {"ragnb.studies.golden", "ragnb.studies.golden.study"},
        ),
        ("from ragnb.studies.golden import GoldenSet", {"ragnb.studies.golden"}),
        ("import ragnb.studies.clq.sweep", {"ragnb.studies.clq.sweep"}),
        ("def f():\n    from ragnb.io.readers import read_run", {"ragnb.io.readers"}),
        ("from . import study", {"ragnb.studies.golden", "ragnb.studies.golden.study"}),
    ],
)
def test_the_graph_counts_imports_as_a_reader_does(source: str, expected: set[str]) -> None:
    modules = {"ragnb.studies.golden", "ragnb.studies.golden.study", "ragnb.studies.clq.sweep"}
    modules |= {"ragnb.io.readers"}
    tree = ast.parse(source)
    assert _edges(tree, "ragnb.studies.golden.pipeline", False, modules) == expected


def test_the_cycle_finder_finds_loops_and_only_loops() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e2"}, "e2": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


# ------------------------------------------------------------------ errors and the public API


def _all_modules() -> list[str]:
    return [
        m.name
        for m in pkgutil.walk_packages(ragnb.__path__, "ragnb.")
        if m.name != "ragnb.__main__"
    ]


def test_every_exception_class_derives_from_ragnb_error() -> None:
    bad = []
    for name in _all_modules():
        module = importlib.import_module(name)
        for cls_name, cls in vars(module).items():
            if (
                inspect.isclass(cls)
                and issubclass(cls, BaseException)
                and cls.__module__ == name
                and not issubclass(cls, RagnbError)
            ):
                bad.append(f"{name}.{cls_name}")
    assert not bad, "exceptions outside RagnbError: " + ", ".join(bad)


def test_the_top_of_the_package_gives_callables() -> None:
    from ragnb import compare, evaluate, read_qrels, read_run

    for f in (evaluate, compare, read_run, read_qrels):
        assert callable(f) and not inspect.ismodule(f), f
    for name in ragnb.__all__:
        assert getattr(ragnb, name) is not None, name


def _api_reference_targets() -> list[str]:
    names = []
    for page in sorted((ROOT / "docs" / "api").glob("*.md")):
        names += re.findall(r"^::: ?(ragnb[\w.]*)", page.read_text(encoding="utf-8"), re.M)
    return names


def test_every_name_the_api_reference_lists_imports() -> None:
    names = _api_reference_targets()
    assert len(names) >= 10
    for dotted in names:
        try:
            importlib.import_module(dotted)
        except ModuleNotFoundError:
            module, _, attr = dotted.rpartition(".")
            assert hasattr(importlib.import_module(module), attr), dotted
