"""The one shape every study answers: ``Config`` -> ``run(config)`` -> a result.

Each study package (``ragnb.retrieval``, ``ragnb.golden``, ``ragnb.diagnostics``, ``ragnb.clq``,
``ragnb.correlation``, ``ragnb.whatif``) exports a config dataclass and ``run(config, ...)``,
whose result answers :class:`StudyResult`: the notebook draws ``banner()``, ``tables()`` and
``charts()``, ``export(folder)`` writes the files a user keeps, ``provenance()`` says what
produced the numbers. A part of a study that cannot run on the data at hand is not an error:
its result says so in ``banner()`` (:func:`skipped`) and leaves its tables out, so a notebook
cell needs no guard. This is scikit-learn's estimator contract applied to studies: one
interface that delivery code (reports, the command line) can rely on without knowing the study.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pandas as pd

__all__ = ["StudyResult", "export_tables", "skipped"]


@runtime_checkable
class StudyResult(Protocol):
    """What ``run(config)`` of every study returns.

    Attributes
    ----------
    config : NotebookParams
        The config the study ran with.
    """

    config: Any

    def banner(self) -> str:
        """The first screen, as Markdown: what was measured, by which models and judges, the
        headline, and every part that was skipped with the reason."""
        ...

    def tables(self) -> dict[str, pd.DataFrame]:
        """The result tables by name (the name is the stem of the exported CSV file)."""
        ...

    def charts(self) -> dict[str, Any]:
        """The charts by name (altair charts; empty when altair is not installed)."""
        ...

    def export(self, folder: str | os.PathLike[str]) -> list[Path]:
        """Write the tables, provenance and any study files under ``folder``; the paths written."""
        ...

    def provenance(self) -> dict[str, Any]:
        """What produced the numbers: data, config, models, judges, versions, cache."""
        ...


def skipped(part: str, because: str) -> str:
    """The banner line of a part of a study that did not run.

    Parameters
    ----------
    part : str
        What was skipped, e.g. ``"Calibration"``.
    because : str
        Why, as the end of a sentence, e.g. ``"the dataset has no human labels"``.

    Returns
    -------
    str
        ``"**Calibration skipped** because the dataset has no human labels."``
    """
    return f"**{part} skipped** because {because.rstrip('.')}."


def export_tables(
    tables: Mapping[str, pd.DataFrame],
    provenance: Mapping[str, Any],
    folder: str | os.PathLike[str],
) -> list[Path]:
    """Write each table as ``<name>.csv`` and the provenance as ``provenance.json``.

    Each file is written atomically (:func:`ragnb.io.write_table_csv`,
    :func:`ragnb.io.write_json`); local paths in the provenance are made public
    (:func:`ragnb.paths.public_paths`).

    Parameters
    ----------
    tables : mapping of str to DataFrame
        Table name (file stem, no path separators) to table.
    provenance : mapping
        JSON-serialisable provenance.
    folder : path
        Output folder (created); relative paths are taken from the project root.

    Returns
    -------
    list of Path
        The files written, tables first, ``provenance.json`` last.

    Raises
    ------
    ValueError
        When a table name contains a path separator.
    """
    from ragnb.io import write_json, write_table_csv
    from ragnb.paths import public_paths, resolve_path

    out = resolve_path(folder)
    written = []
    for name, frame in tables.items():
        if "/" in name or os.sep in name or not name:
            raise ValueError(f"table name {name!r} is not a file stem")
        path = out / f"{name}.csv"
        write_table_csv(frame, path)
        written.append(path)
    path = out / "provenance.json"
    write_json(public_paths(dict(provenance)), path)
    written.append(path)
    return written
