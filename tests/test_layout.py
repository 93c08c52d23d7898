"""The package's layout stays as README's layout section draws it.

Read from the source, not imported: every ``import`` and ``from ... import`` statement of every
module under ``ragnb/`` (function-level imports included) is checked against the layers

    foundations -> measures, evaluate, stats -> backends -> studies -> delivery

A module may import its own layer or a lower one; no study imports another study. Sizes are
bounded so that no module or function grows back into a god object.
"""

from __future__ import annotations

import ast
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
    "_groupsort": 0,
    "_dictjoin": 0,
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
    "__init__": 4,
}
STUDIES = {name for name, layer in LAYERS.items() if layer == 3}

MAX_MODULE_LINES = 900
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


def test_no_module_over_the_line_budget() -> None:
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in _modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


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
