"""Pages generated at build time by mkdocs-gen-files.

- Each user-guide page ``guide/<notebook>.md`` gets a "Parameters" table read from the
  notebook's cell tagged ``parameters`` (name, type, default, help), the cell that
  ``ragnb report -p NAME=VALUE`` and papermill override, so the table cannot drift from it.
- ``benchmarks.md`` is ``benchmarks/README.md``, the measurements, as a page of the site.
- ``layout.md`` gets its table of layers where it holds ``LAYERS_MARKER``: one row per package
  of the ``layers`` contract of ``[tool.importlinter]`` in ``pyproject.toml`` (the contract
  ``lint-imports`` checks), with its modules and the first sentence of its docstring, and one
  line per ``independence`` contract, so the page cannot drift from the contracts.

Run alone, ``python docs/gen_pages.py NOTEBOOK`` prints one notebook's table, and
``python docs/gen_pages.py --layers`` the layer table.
"""

from __future__ import annotations

import ast
import io
import json
import re
import sys
import tokenize
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
LAYERS_MARKER = "<!-- layers: written here by docs/gen_pages.py from pyproject.toml -->"
_ROLE = re.compile(r":[a-z]+:`(~?)([^`]+)`")
_ROLE_ASIDE = re.compile(r" \([^()]*:[a-z]+:`[^()]*\)")  # " (:mod:`ragnb.io.files`)"


def parameters(notebook: Path) -> list[tuple[str, str, str, str]]:
    """(name, type, default, help) of each line ``name: type = default  # help`` of the
    notebook's ``parameters`` cell, in order."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    tagged = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(tagged) != 1:
        raise SystemExit(f"{notebook.name}: expected one cell tagged 'parameters'")
    source = "".join(tagged[0]["source"])
    comments = {
        tok.start[0]: tok.string.lstrip("#").strip()
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    }
    rows = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            rows.append(
                (
                    node.target.id,
                    ast.unparse(node.annotation),
                    ast.get_source_segment(source, node.value) or "",
                    comments.get(node.end_lineno or node.lineno, ""),
                )
            )
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;")


def parameters_markdown(notebook: Path) -> str:
    lines = [
        "## Parameters",
        "",
        f"Read from the `parameters` cell of `notebooks/{notebook.name}` when this site was "
        "built. Set one with `ragnb report "
        f"{notebook.stem} -p NAME=VALUE` (repeatable); an unknown name is an error, and a value "
        "is read as the type below.",
        "",
        "| name | type | default | what it sets |",
        "|---|---|---|---|",
    ]
    for name, kind, default, help_ in parameters(notebook):
        default = default.replace("|", "\\|")
        lines.append(f"| `{name}` | {kind} | `{default}` | {_cell(help_)} |")
    return "\n".join(lines) + "\n"


def contracts() -> list[dict]:
    """The ``[[tool.importlinter.contracts]]`` of ``pyproject.toml``, in order."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["tool"]["importlinter"]["contracts"]


def _source(module: str) -> Path:
    path = ROOT.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def summary(module: str) -> str:
    """The first sentence of a module's docstring (up to its first semicolon), as Markdown:
    asides that only name modules or functions left out, roles and ````code```` as code."""
    doc = ast.get_docstring(ast.parse(_source(module).read_text(encoding="utf-8"))) or ""
    text = " ".join(doc.split("\n\n", 1)[0].split())
    text = _ROLE_ASIDE.sub("", text)
    text = re.split(r"(?<=\.)\s|;\s", text, maxsplit=1)[0].rstrip(".")
    text = _ROLE.sub(lambda m: "`" + (m[2].rsplit(".", 1)[-1] if m[1] else m[2]) + "`", text)
    return _cell(text.replace("``", "`"))


def modules(package: str) -> list[str]:
    """The public modules and subpackages of a package (none for a module)."""
    folder = ROOT.joinpath(*package.split("."))
    if not folder.is_dir():
        return []
    names = [p.stem for p in folder.glob("*.py") if not p.name.startswith("_")]
    names += [p.name for p in folder.iterdir() if (p / "__init__.py").exists()]
    return sorted(names)


def layers_markdown() -> str:
    """The layer table and the independence contracts of ``pyproject.toml`` as Markdown."""
    lines = []
    for contract in contracts():
        if contract["type"] == "layers":
            lines += [
                f"**{_cell(contract['name'])}**, from the top layer down:",
                "",
                "| layer | package | modules | what it holds |",
                "|---|---|---|---|",
            ]
            for number, layer in enumerate(contract["layers"], 1):
                for package in (name.strip() for name in re.split(r"[|:]", layer)):
                    names = ", ".join(modules(package)) or "(a module)"
                    lines.append(f"| {number} | `{package}` | {names} | {summary(package)} |")
            lines.append("")
        elif contract["type"] == "independence":
            listed = ", ".join(f"`{m}`" for m in contract["modules"])
            lines += [f"**{_cell(contract['name'])}**: {listed} import nothing of each other.", ""]
        else:
            lines += [f"**{_cell(contract['name'])}** ({contract['type']}).", ""]
    return "\n".join(lines)


def main() -> None:
    import mkdocs_gen_files

    for notebook in NOTEBOOKS:
        page = f"guide/{notebook.stem}.md"
        with mkdocs_gen_files.open(page, "a") as out:
            out.write("\n" + parameters_markdown(notebook))
    with mkdocs_gen_files.open("benchmarks.md", "w") as out:
        out.write((ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8"))
    mkdocs_gen_files.set_edit_path("benchmarks.md", "../benchmarks/README.md")
    with mkdocs_gen_files.open("layout.md", "r") as page:
        layout = page.read()
    if LAYERS_MARKER not in layout:
        raise SystemExit(f"docs/layout.md: no line {LAYERS_MARKER}")
    with mkdocs_gen_files.open("layout.md", "w") as page:
        page.write(layout.replace(LAYERS_MARKER, layers_markdown()))


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        if arg == "--layers":
            print(layers_markdown())
        else:
            print(parameters_markdown(ROOT / "notebooks" / f"{Path(arg).stem}.ipynb"))
elif __name__ == "<run_path>":  # run by mkdocs-gen-files (runpy.run_path); an import does nothing
    main()
