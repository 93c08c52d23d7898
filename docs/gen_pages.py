"""Pages generated at build time by mkdocs-gen-files.

- Each user-guide page ``guide/<notebook>.md`` gets a "Parameters" table read from the
  notebook's cell tagged ``parameters`` (name, type, default, help), the cell that
  ``ragnb report -p NAME VALUE`` and papermill override, so the table cannot drift from it.
- ``benchmarks.md`` is ``benchmarks/README.md``, the measurements, as a page of the site.

Run alone, ``python docs/gen_pages.py NOTEBOOK`` prints one notebook's table.
"""

from __future__ import annotations

import ast
import io
import json
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


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
        f"{notebook.stem} -p NAME VALUE` (repeatable); an unknown name is an error, and a value "
        "is read as the type below.",
        "",
        "| name | type | default | what it sets |",
        "|---|---|---|---|",
    ]
    for name, kind, default, help_ in parameters(notebook):
        default = default.replace("|", "\\|")
        lines.append(f"| `{name}` | {kind} | `{default}` | {_cell(help_)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    import mkdocs_gen_files

    for notebook in NOTEBOOKS:
        page = f"guide/{notebook.stem}.md"
        with mkdocs_gen_files.open(page, "a") as out:
            out.write("\n" + parameters_markdown(notebook))
    with mkdocs_gen_files.open("benchmarks.md", "w") as out:
        out.write((ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8"))
    mkdocs_gen_files.set_edit_path("benchmarks.md", "../benchmarks/README.md")


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(parameters_markdown(ROOT / "notebooks" / f"{Path(arg).stem}.ipynb"))
elif __name__ == "<run_path>":  # run by mkdocs-gen-files (runpy.run_path); an import does nothing
    main()
