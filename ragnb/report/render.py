"""Executing the parametrised notebooks with papermill and exporting them as HTML reports.

A report is a notebook of ``notebooks/`` executed by papermill with checked parameters, then
converted by nbconvert into one self-contained HTML file: code cells hidden, no CDN scripts
(require.js, MathJax and mermaid are left out; charts carry their own Vega bundle, see
:mod:`ragnb.report.charts`). Executed notebooks go to ``reports/_executed/``; HTML files to
``reports/<notebook>.html``; ``reports/index.html`` links them all. Every file is written
atomically.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragnb.core.lazylibs import require
from ragnb.core.paths import display_path, local_path_prefixes, notebooks_folder, project_root
from ragnb.errors import InputError
from ragnb.io.files import atomic_write
from ragnb.report.params import unknown_parameter

__all__ = [
    "ReportResult",
    "build_index",
    "coerce_parameter",
    "export_html",
    "list_notebooks",
    "notebook_parameters",
    "render_report",
    "resolve_notebook",
]

TEMPLATE_DIR = Path(__file__).parent / "templates"
TEMPLATE_NAME = "ragnb_report"
EXECUTED = "_executed"


def list_notebooks(notebooks_dir: Path | None = None) -> list[Path]:
    """The report notebooks, sorted by name (``notebooks/*.ipynb``)."""
    folder = notebooks_folder(notebooks_dir)
    return sorted(p for p in folder.glob("*.ipynb") if not p.name.startswith("."))


def resolve_notebook(name: str | os.PathLike[str], notebooks_dir: Path | None = None) -> Path:
    """A notebook path from a name (``01_retrieval_evaluation``, with or without ``.ipynb``).

    Raises
    ------
    InputError
        If there is no such notebook; the message lists the available ones.
    """
    path = Path(name)
    if path.suffix == ".ipynb" and path.exists():
        return path
    folder = notebooks_folder(notebooks_dir)
    candidate = folder / (path.name if path.suffix == ".ipynb" else f"{path.name}.ipynb")
    if candidate.exists():
        return candidate
    names = [p.stem for p in list_notebooks(folder)]
    raise InputError(f"no notebook {str(name)!r}; available: {names}")


def notebook_parameters(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The parameters declared in a notebook's ``parameters`` cell.

    Returns
    -------
    dict
        ``{name: {"name", "inferred_type_name", "default", "help"}}`` as
        ``papermill.inspect_notebook`` reports them.
    """
    papermill = require("papermill")

    return dict(papermill.inspect_notebook(str(path)))


_TYPES = {"str": str, "int": int, "float": float, "bool": bool}


def coerce_parameter(name: str, value: Any, declared: dict[str, Any]) -> Any:
    """Turn a command-line string into the type the notebook declares for ``name``.

    Parameters
    ----------
    name : str
    value : Any
        A string from the command line, or an already typed value (returned as is when it fits).
    declared : dict
        One entry of :func:`notebook_parameters`.

    Raises
    ------
    InputError
        If ``value`` cannot be read as the declared type.
    """
    import yaml

    type_name = str(declared.get("inferred_type_name", "None")).strip()
    if not isinstance(value, str):
        return value
    try:
        if type_name == "str":
            return value
        if type_name == "bool":
            lowered = value.strip().lower()
            if lowered in ("true", "1", "yes"):
                return True
            if lowered in ("false", "0", "no"):
                return False
            raise ValueError(value)
        if type_name in ("int", "float"):
            return _TYPES[type_name](value)
        if type_name.startswith(("list", "dict", "tuple")):
            parsed = yaml.safe_load(value)
            want = list if type_name.startswith(("list", "tuple")) else dict
            if not isinstance(parsed, want):
                raise ValueError(value)
            return parsed
        return yaml.safe_load(value)
    except (ValueError, yaml.YAMLError):
        raise InputError(
            f"parameter {name!r} takes a {type_name}, got {value!r}", column=name
        ) from None


def check_parameters(path: Path, params: dict[str, Any]) -> dict[str, Any]:
    """Coerce ``params`` to the notebook's declared types; unknown names are an error.

    Raises
    ------
    InputError
        Naming the unknown parameter and the closest one the notebook takes
        (:func:`ragnb.report.params.unknown_parameter`).
    """
    declared = notebook_parameters(path)
    out = {}
    for name, value in params.items():
        if name not in declared:
            raise unknown_parameter(name, declared, f"notebook {path.stem!r}")
        out[name] = coerce_parameter(name, value, declared[name])
    return out


@dataclass(frozen=True)
class ReportResult:
    """What :func:`render_report` produced.

    Attributes
    ----------
    notebook : str
        Notebook name (stem).
    html : Path
        The HTML report.
    executed : Path
        The executed notebook.
    parameters : dict
        Parameters passed to papermill (after coercion).
    seconds : float
        Wall-clock time of execution and export, seconds.
    """

    notebook: str
    html: Path
    executed: Path
    parameters: dict[str, Any]
    seconds: float


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def export_html(executed: Path, out: Path, title: str | None = None) -> None:
    """Convert an executed notebook to a self-contained HTML file with code hidden.

    Parameters
    ----------
    executed : Path
        The executed ``.ipynb``.
    out : Path
        The HTML file, written atomically.
    title : str, optional
        Page title; default the notebook's name.
    """
    nbformat = require("nbformat")
    HTMLExporter = require("nbconvert").HTMLExporter

    nb = nbformat.read(str(executed), as_version=4)
    # Progress bars and other stderr streams are for the terminal, not the report. Live
    # ipywidgets (tqdm.auto's bars, the what-if controls) need a kernel: in a static page their
    # state would only make nbconvert load the widget manager from a CDN, so they are dropped
    # with the notebook's widget state (reports draw what-if views as altair sliders instead).
    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            cell["outputs"] = [
                o
                for o in cell.get("outputs", [])
                if not (o.get("output_type") == "stream" and o.get("name") == "stderr")
                and WIDGET_VIEW not in o.get("data", {})
            ]
    nb.metadata.pop("widgets", None)
    if title:
        nb.metadata["title"] = title
    exporter = HTMLExporter(
        template_name=TEMPLATE_NAME,
        extra_template_basedirs=[str(TEMPLATE_DIR)],
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        embed_images=True,
    )
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": executed.stem}})
    given = nb.metadata.get("papermill", {}).get("parameters", {})
    paths = [v for v in given.values() if isinstance(v, str) and os.path.isabs(v)]
    with atomic_write(out) as f:
        f.write(redact_local_paths(body, paths=paths))


def redact_local_paths(
    text: str, root: Path | None = None, *, paths: list[str] | tuple[str, ...] = ()
) -> str:
    """``text`` with the project root, its parent and the home folder replaced by relative forms.

    The last guard of every report (issue: a report shared with a colleague must not show the
    author's file system or user name); the studies already name paths with
    :func:`ragnb.core.paths.display_path`.

    Parameters
    ----------
    text : str
    root : Path, optional
        The project root; default :func:`ragnb.core.paths.project_root`.
    paths : sequence of str
        Absolute paths given to the notebook (e.g. a ``dataset`` folder outside the project and
        the home folder): each is replaced by its :func:`ragnb.core.paths.display_path` first.
    """
    given = [(p.rstrip("/") or p, display_path(p, root)) for p in paths if os.path.isabs(p)]
    given.sort(key=lambda kv: len(kv[0]), reverse=True)
    for prefix, repl in given + local_path_prefixes(root):
        # a whole path component only: not "/workshop" for "/work", not inside a URL
        tail = "" if prefix.endswith("/") else r"(?![\w.-])"
        text = re.sub(r"(?<![\w.:/-])" + re.escape(prefix) + tail, repl, text)
    return text


def render_report(
    notebook: str | os.PathLike[str],
    parameters: dict[str, Any] | None = None,
    *,
    reports_dir: str | os.PathLike[str] | None = None,
    kernel_name: str | None = None,
    update_index: bool = True,
    progress: bool = False,
) -> ReportResult:
    """Execute a notebook with papermill and export it as ``reports/<notebook>.html``.

    Parameters
    ----------
    notebook : str or PathLike
        A notebook name in ``notebooks/`` or a path.
    parameters : dict, optional
        Parameter values; strings are coerced to the declared types. Unknown names raise.
    reports_dir : str or PathLike, optional
        Default ``<project root>/reports``.
    kernel_name : str, optional
        Jupyter kernel; default the notebook's (``python3``, which is the running interpreter's
        environment when ipykernel is installed there).
    update_index : bool, default True
        Rebuild ``index.html`` afterwards.
    progress : bool, default False
        Show papermill's progress bar over the notebook's cells (tqdm, on stderr).

    Notes
    -----
    A notebook that declares an ``export_dir`` parameter and is not given one exports its data
    (runs, tables, provenance) to ``<reports_dir>/<notebook>/``, beside its HTML report.

    Returns
    -------
    ReportResult

    Raises
    ------
    InputError
        Unknown notebook or parameter, or a value of the wrong type.
    papermill.PapermillExecutionError
        If a cell fails; the executed notebook (with the error) is kept in ``_executed/`` and no
        HTML report is written.
    """
    papermill = require("papermill")

    path = resolve_notebook(notebook)
    params = check_parameters(path, dict(parameters or {}))
    out_dir = Path(reports_dir) if reports_dir is not None else project_root() / "reports"
    if "export_dir" in notebook_parameters(path) and "export_dir" not in params:
        params["export_dir"] = str((out_dir / path.stem).resolve())
    executed = out_dir / EXECUTED / path.name
    executed.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    tmp_executed = executed.with_name(f".partial.{executed.name}")
    papermill.execute_notebook(
        str(path),
        str(tmp_executed),
        parameters=params,
        kernel_name=kernel_name,
        progress_bar=progress,
        cwd=str(project_root()),
    )
    # the executed notebook lands beside the report: no absolute local path in it either
    given = [v for v in params.values() if isinstance(v, str) and os.path.isabs(v)]
    text = redact_local_paths(tmp_executed.read_text(encoding="utf-8"), paths=given)
    tmp_executed.write_text(text, encoding="utf-8")
    os.replace(tmp_executed, executed)
    html_path = out_dir / f"{path.stem}.html"
    export_html(executed, html_path, title=f"ragnb report: {path.stem}")
    seconds = time.perf_counter() - start
    result = ReportResult(path.stem, html_path, executed, params, seconds)
    if update_index:
        build_index(out_dir)
    return result


def _report_facts(executed: Path) -> dict[str, Any]:
    try:
        nb = json.loads(executed.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    meta = nb.get("metadata", {}).get("papermill", {})
    return {
        "parameters": meta.get("parameters", {}),
        "start": meta.get("start_time"),
        "duration": meta.get("duration"),
    }


def _display_value(value: Any) -> Any:
    """A parameter value for the index page: absolute paths shown as :func:`display_path`."""
    if isinstance(value, str) and os.path.isabs(value):
        return display_path(value)
    return value


def build_index(reports_dir: str | os.PathLike[str] | None = None) -> Path:
    """Write ``index.html`` linking every report in ``reports_dir``, with its parameters."""
    out_dir = Path(reports_dir) if reports_dir is not None else project_root() / "reports"
    rows = []
    for page in sorted(out_dir.glob("*.html")):
        if page.name == "index.html":
            continue
        facts = _report_facts(out_dir / EXECUTED / f"{page.stem}.ipynb")
        params = ", ".join(
            f"{k}={_display_value(v)!r}" for k, v in facts.get("parameters", {}).items()
        )
        duration = facts.get("duration")
        rows.append(
            "<tr>"
            f'<td><a href="{html.escape(page.name)}">{html.escape(page.stem)}</a></td>'
            f"<td>{html.escape(str(facts.get('start') or ''))}</td>"
            f"<td>{'' if duration is None else f'{duration:.1f} s'}</td>"
            f"<td><code>{html.escape(params) or '(defaults)'}</code></td>"
            "</tr>"
        )
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    document = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ragnb reports</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem; color: #222; }}
table {{ border-collapse: collapse; }}
td, th {{ border-bottom: 1px solid #ddd; padding: 0.4rem 0.8rem; text-align: left; }}
code {{ font-size: 0.85em; }}
</style></head>
<body>
<h1>ragnb reports</h1>
<p>Index written {now}. Each report is a notebook executed by papermill; its parameters are
listed beside it.</p>
<table><thead><tr><th>report</th><th>executed</th><th>took</th><th>parameters</th></tr></thead>
<tbody>
{chr(10).join(rows) or '<tr><td colspan="4">no reports yet</td></tr>'}
</tbody></table>
</body></html>
"""
    index = out_dir / "index.html"
    with atomic_write(index) as f:
        f.write(document)
    return index
