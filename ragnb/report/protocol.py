"""The one shape every study answers: ``Config`` -> ``run(config)`` -> a result.

Each study package (``ragnb.studies.retrieval``, ``ragnb.studies.golden``,
``ragnb.studies.diagnostics``, ``ragnb.studies.clq``, ``ragnb.studies.correlation``,
``ragnb.studies.whatif``) exports a config dataclass and ``run(config, ...)``, whose result answers
:class:`StudyResult`: the notebook draws ``banner()``, ``tables()`` and ``charts()``,
``export(folder)`` writes the files a user keeps, ``provenance()`` says what produced the numbers. A
part of a study that cannot run on the data at hand is not an error: its result says so in
``banner()`` (:func:`skipped`) and leaves its tables out, so a notebook cell needs no guard. This is
scikit-learn's estimator contract applied to studies: one interface that delivery code (reports, the
command line) can rely on without knowing the study.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pandas as pd

__all__ = ["StudyResult", "StudyResultBase", "export_note", "export_tables", "skipped"]


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


class StudyResultBase:
    """The :meth:`export` every study result shares; a study's result class inherits it.

    A subclass defines :meth:`tables` and :meth:`provenance`, and overrides the hooks
    :meth:`export_first` (files written before the tables), :meth:`export_last` (files written
    after ``provenance.json``) and :meth:`exported_tables` (the tables written as CSV) when
    it writes files of its own.
    """

    def tables(self) -> dict[str, pd.DataFrame]:
        """The result tables by the stem of their exported CSV file."""
        raise NotImplementedError

    def provenance(self) -> dict[str, Any]:
        """What produced the numbers, JSON-serialisable."""
        raise NotImplementedError

    def exported_tables(self) -> dict[str, pd.DataFrame]:
        """The tables :meth:`export` writes as CSV: all of :meth:`tables` unless overridden."""
        return self.tables()

    def export_first(self, out: Path) -> list[Path]:
        """Write the study's own files under ``out`` before the tables; the paths written."""
        return []

    def export_last(self, out: Path) -> list[Path]:
        """Write the study's own files under ``out`` after the tables; the paths written."""
        return []

    def export(self, folder: str | os.PathLike[str]) -> list[Path]:
        """Write the result for reuse outside the report.

        Files, in order: the study's own (:meth:`export_first`), each of
        :meth:`exported_tables` as ``<name>.csv`` and :meth:`provenance` as
        ``provenance.json`` (:func:`export_tables`, each file atomically), then the study's
        files written last (:meth:`export_last`).

        Parameters
        ----------
        folder : str or PathLike
            Output folder (created); relative paths are taken from the project root.

        Returns
        -------
        list of Path
            The files written, in the order above.

        Raises
        ------
        ValueError
            When a table name contains a path separator.
        """
        from ragnb.core.paths import resolve_path

        out = resolve_path(folder)
        written = self.export_first(out)
        written += export_tables(self.exported_tables(), self.provenance(), out)
        return written + self.export_last(out)


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


def export_note(
    export_dir: str | os.PathLike[str] | None, files: str = "Tables (CSV) and provenance (JSON)"
) -> list[str]:
    """The banner line that says where a study exported its files, as a list for ``lines +=``.

    Parameters
    ----------
    export_dir : path or None
        The config's ``export_dir``; empty or None when nothing was exported.
    files : str, default "Tables (CSV) and provenance (JSON)"
        What was exported, as the start of the sentence.

    Returns
    -------
    list of str
        ``["<files> exported to `<folder>`."]`` with the folder as a report may show it
        (:func:`ragnb.core.paths.display_path`), or ``[]`` without ``export_dir``.
    """
    from ragnb.core.paths import display_path, resolve_path

    if not export_dir:
        return []
    return [f"{files} exported to `{display_path(resolve_path(export_dir))}`."]


def export_tables(
    tables: Mapping[str, pd.DataFrame],
    provenance: Mapping[str, Any],
    folder: str | os.PathLike[str],
) -> list[Path]:
    """Write each table as ``<name>.csv`` and the provenance as ``provenance.json``.

    Each file is written atomically (:func:`ragnb.io.files.write_table_csv`,
    :func:`ragnb.io.files.write_json`); local paths in the provenance are made public
    (:func:`ragnb.core.paths.public_paths`).

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
    from ragnb.core.paths import public_paths, resolve_path
    from ragnb.io.files import write_json, write_table_csv

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
