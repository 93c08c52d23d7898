"""The seven studies, one entry each: notebook, package, config, ``run``.

Delivery code (:mod:`ragnb.report.render`, :mod:`ragnb.cli.main`) reaches a study only through this
table and the :class:`ragnb.report.protocol.StudyResult` its ``run`` returns, so a cross-cutting
change (provenance, an export format, a notice) is made once.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ragnb.errors import InputError
from ragnb.io.files import atomic_write
from ragnb.report.params import parameters_cell, unknown_parameter

__all__ = ["STUDIES", "Study", "study", "sync_parameters"]


@dataclass(frozen=True)
class Study:
    """One study: its notebook, its package and the names the package exports.

    Attributes
    ----------
    notebook : str
        Notebook stem under ``notebooks/``.
    package : str
        The study's package, which exports ``config`` and ``run``.
    config : str
        Name of the config dataclass in ``package``.
    """

    notebook: str
    package: str
    config: str

    @property
    def name(self) -> str:
        """The short name (the package's last part), e.g. ``"retrieval"``."""
        return self.package.rsplit(".", 1)[-1]

    def config_class(self) -> type:
        """The config dataclass."""
        return getattr(importlib.import_module(self.package), self.config)

    def configure(self, params: Mapping[str, Any] | None = None) -> Any:
        """The config from its defaults and ``params``.

        Parameters
        ----------
        params : mapping of str to Any, optional
            Field name to value; a string is read as the field's type
            (:func:`ragnb.report.render.coerce_parameter`: ``"3"`` for an int, ``'["bm25"]'`` or
            ``"[bm25]"`` for a list).

        Returns
        -------
        NotebookParams
            An instance of :meth:`config_class`.

        Raises
        ------
        InputError
            On a name that is not a field (naming the closest one), a value that cannot be read
            as the field's type, or a bad value (the config's own checks).
        """
        return self.config_class().from_params(**self.coerce(params))  # type: ignore[attr-defined]

    def coerce(self, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``params`` read as the config's field types, without building the config.

        Parameters
        ----------
        params : mapping of str to Any, optional
            Field name to value, as :meth:`configure` takes them.

        Returns
        -------
        dict of str to Any

        Raises
        ------
        InputError
            On a name that is not a field (naming the closest field,
            :func:`ragnb.report.params.unknown_parameter`) or a value that cannot be read as the
            field's type.
        """
        from ragnb.report.render import coerce_parameter

        types = {f.name: f.type for f in fields(self.config_class())}
        values = {}
        for name, value in (params or {}).items():
            if name not in types:
                raise unknown_parameter(name, types, f"study {self.name!r}")
            kind = types[name]
            kind = kind if isinstance(kind, str) else getattr(kind, "__name__", str(kind))
            values[name] = coerce_parameter(name, value, {"inferred_type_name": kind})
        return values

    def run(self, config: Any = None, **kwargs: Any) -> Any:
        """``package.run(config, **kwargs)``; ``config`` defaults to the config's defaults."""
        module = importlib.import_module(self.package)
        return module.run(config if config is not None else self.config_class()(), **kwargs)


STUDIES: tuple[Study, ...] = (
    Study("01_retrieval_evaluation", "ragnb.studies.retrieval", "RetrievalEvaluationConfig"),
    Study("02_golden_set", "ragnb.studies.golden", "GoldenSetConfig"),
    Study("03_embedder_diagnostics", "ragnb.studies.diagnostics", "DiagnosticsConfig"),
    Study("04_clq_tradeoffs", "ragnb.studies.clq", "ClqTradeoffsConfig"),
    Study("05_measure_correlation", "ragnb.studies.correlation", "CorrelationConfig"),
    Study("06_what_if", "ragnb.studies.whatif", "WhatIfConfig"),
    Study("07_agentic_retrieval", "ragnb.studies.agentic", "AgenticConfig"),
)


def study(name: str) -> Study:
    """The study of a notebook stem (``"01_retrieval_evaluation"``), a number (``"01"``) or a
    package name (``"retrieval"``).

    Raises
    ------
    InputError
        On an unknown name; the message lists the known ones.
    """
    for s in STUDIES:
        if name in (s.notebook, s.notebook[:2], s.name):
            return s
    known = ", ".join(s.name for s in STUDIES)
    raise InputError(f"no study {name!r}; known: {known} (or the notebook names)")


def _parameters_cell_index(nb: dict[str, Any], path: Path) -> int:
    for i, cell in enumerate(nb["cells"]):
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            return i
    raise InputError(f"{path} has no cell tagged 'parameters'")


def sync_parameters(
    notebooks_dir: str | os.PathLike[str],
    *,
    write: bool = False,
    only: Iterable[str] | None = None,
) -> list[str]:
    """Compare (or rewrite) each notebook's ``parameters`` cell with the one its config generates.

    Parameters
    ----------
    notebooks_dir : path
        The folder holding the notebooks.
    write : bool, default False
        Rewrite the cells that differ (the rest of the notebook is kept byte for byte).
    only : iterable of str, optional
        Names of the studies to check (:func:`study` names); default all of them.

    Returns
    -------
    list of str
        The notebooks whose cell differed (rewritten when ``write``).

    Raises
    ------
    InputError
        When a notebook is missing or has no ``parameters`` cell.
    """
    folder = Path(notebooks_dir)
    chosen = STUDIES if only is None else tuple(study(name) for name in only)
    differ = []
    for s in chosen:
        path = folder / f"{s.notebook}.ipynb"
        if not path.is_file():
            raise InputError(f"notebook {path} not found")
        text = path.read_text(encoding="utf-8")
        nb = json.loads(text)
        index = _parameters_cell_index(nb, path)
        want = parameters_cell(s.config_class())
        if "".join(nb["cells"][index]["source"]) == want:
            continue
        differ.append(s.notebook)
        if write:
            nb["cells"][index]["source"] = want.splitlines(keepends=True)
            with atomic_write(path) as f:
                f.write(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return differ
