"""The labelling views of JupyterLab: human labels for calibrating a judge, and the audit of a
golden set's refined top.

- :class:`LabellingWidget` shows one query and one passage at a time, with the grade scale as
  buttons and keys, skip, undo, progress, and the judge's grade shown only once the person has
  answered (so it cannot anchor them). Every label goes at once to a
  :class:`~ragnb.studies.golden.labelling.LabelStore` (a TREC qrels file that only grows by whole
  lines).
- :func:`label_pairs` builds it over a calibration sample
  (:func:`~ragnb.studies.golden.labelling.calibration_sample`) of a golden-set run folder or of
  frames, or over rows that already hold the texts.
- :func:`audit_view` builds it over the refined top of a golden set
  (:func:`~ragnb.studies.golden.audit.audit_sample`); :func:`~ragnb.studies.golden.audit.fold_audit`
  folds the labels back.

References
----------
.. [1] J. Bergum, "Improving retrieval with LLM-as-a-judge", Vespa blog, 2024 (calibrating the
   judge on a few human labels).
"""

from __future__ import annotations

import html
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ragnb.core.lazylibs import require
from ragnb.core.validation import require_columns
from ragnb.errors import InputError
from ragnb.io.files import read_json, read_records
from ragnb.studies.golden.audit import AUDIT_LABELS, Scale, audit_source, record_audit_design
from ragnb.studies.golden.goldenset import GoldenSet
from ragnb.studies.golden.labelling import LabelStore, calibration_sample, pair_items

__all__ = ["LabellingWidget", "audit_view", "label_pairs"]

log = logging.getLogger("ragnb.studies.golden.labelling_view")

Pair = tuple[str, str]


class LabellingWidget:
    """One query and one passage at a time; grade buttons and keys, skip, undo, progress.

    Pairs come in the sample's order, those already labelled or skipped left out, so reopening
    on the same store resumes where the person stopped. The judge's grade of a pair is never in
    the page before the person has graded it; afterwards the line under the buttons says what
    they gave and what the judge gave for the pair just answered.

    Parameters
    ----------
    items : DataFrame
        Pairs to label in order: ``query_id``, ``doc_id``, ``query`` (text), ``passage`` (text),
        ``judge_grade`` (int, optional).
    store : LabelStore
    scale : (int, int), default (0, 2)
        Lowest and highest grade: one button (and digit key) per grade.

    Attributes
    ----------
    buttons : dict of int to ipywidgets.Button
        CSS classes ``ragnb-grade-<g>``; ``skip_button`` (``ragnb-skip``) and ``undo_button``
        (``ragnb-undo``) likewise.
    keys : ipywidgets.Text
        CSS class ``ragnb-keys``: click it, then type a digit to grade, ``s`` to skip, ``u`` to
        undo (JupyterLab gives widgets no key events of their own; a text box receives them).
    progress, query, passage, judge : ipywidgets.HTML
        CSS classes ``ragnb-progress``, ``ragnb-query``, ``ragnb-passage``, ``ragnb-judge``.
    box : ipywidgets.VBox
        The whole view; displaying the object displays it.
    """

    def __init__(
        self, items: pd.DataFrame, store: LabelStore, *, scale: tuple[int, int] = (0, 2)
    ) -> None:
        widgets = require("ipywidgets")

        require_columns(items, ("query_id", "doc_id", "query", "passage"), "the items frame")
        lo, hi = (int(scale[0]), int(scale[1]))
        if not lo < hi or hi - lo > 9:
            raise InputError(f"scale must be (low, high) with low < high <= low + 9, got {scale}")
        self.items = items.astype({"query_id": str, "doc_id": str}).reset_index(drop=True)
        self.store = store
        self.grades = list(range(lo, hi + 1))
        pairs = zip(self.items["query_id"], self.items["doc_id"], strict=True)
        self._pos: dict[Pair, int] = {p: i for i, p in enumerate(pairs)}
        # what this session can undo, newest last: ("label" | "skip", pair); earlier sessions'
        # labels (not their skips) can be undone too, newest first
        self._history: list[tuple[str, Pair]] = [
            ("label", p) for p in zip(*self._saved_columns(), strict=True) if p in self._pos
        ]
        self.buttons = {g: widgets.Button(description=str(g)) for g in self.grades}
        for g, b in self.buttons.items():
            b.add_class(f"ragnb-grade-{g}")
            b.on_click(lambda _b, g=g: self.answer(g))
        self.skip_button = widgets.Button(description="Skip (s)")
        self.skip_button.add_class("ragnb-skip")
        self.skip_button.on_click(lambda _b: self.skip())
        self.undo_button = widgets.Button(description="Undo (u)")
        self.undo_button.add_class("ragnb-undo")
        self.undo_button.on_click(lambda _b: self.undo())
        self.keys = widgets.Text(
            placeholder=f"keys: {lo}-{hi} grade, s skip, u undo", continuous_update=True
        )
        self.keys.add_class("ragnb-keys")
        self.keys.observe(self._typed, names="value")
        self.progress, self.query, self.passage, self.judge = (widgets.HTML() for _ in range(4))
        for w, name in ((self.progress, "progress"), (self.query, "query")):
            w.add_class(f"ragnb-{name}")
        self.passage.add_class("ragnb-passage")
        self.judge.add_class("ragnb-judge")
        row = widgets.HBox([*self.buttons.values(), self.skip_button, self.undo_button, self.keys])
        self.box = widgets.VBox([self.progress, self.query, self.passage, row, self.judge])
        self.current: Pair | None = None
        self._redraw()

    def _saved_columns(self) -> tuple[list[str], list[str]]:
        saved = self.store.labelled()
        return list(saved["query_id"]), list(saved["doc_id"])

    # -- actions (the buttons and keys call these)

    def answer(self, grade: int) -> None:
        """Save ``grade`` for the current pair, reveal the judge's grade of it, move on."""
        if self.current is None or grade not in self.grades:
            return
        pair = self.current
        self.store.label(pair[0], pair[1], int(grade))
        self._history.append(("label", pair))
        row = self.items.iloc[self._pos[pair]]
        judge = row.get("judge_grade") if "judge_grade" in self.items.columns else None
        said = "not known" if judge is None or pd.isna(judge) else str(int(judge))
        self.judge.value = (
            f"<b>{html.escape(pair[1])}</b> (query {html.escape(pair[0])}): you gave "
            f"<b>{grade}</b>, the judge gave <b class='ragnb-judge-grade'>{said}</b>"
        )
        self._redraw()

    def skip(self) -> None:
        """Skip the current pair (recorded; it is not offered again)."""
        if self.current is None:
            return
        self.store.skip(*self.current)
        self._history.append(("skip", self.current))
        self.judge.value = ""
        self._redraw()

    def undo(self) -> None:
        """Take back the last label or skip; that pair is offered again."""
        while self._history:
            kind, pair = self._history.pop()
            if kind == "label" and self.store.grade_of(*pair) is not None:
                self.store.retract(*pair)
                break
            if kind == "skip" and pair in self.store.skipped():
                self.store.unskip([pair])
                break
        self.judge.value = ""
        self._redraw()

    def revisit_skipped(self) -> None:
        """Offer the skipped pairs again (forgets the skips)."""
        self.store.unskip()
        self._redraw()

    def _typed(self, change: Any) -> None:
        text = str(change["new"])
        if not text:
            return
        self.keys.value = ""
        for ch in text.lower():
            if ch.isdigit() and int(ch) in self.grades:
                self.answer(int(ch))
            elif ch == "s":
                self.skip()
            elif ch == "u":
                self.undo()

    # -- view

    def remaining(self) -> list[Pair]:
        """Pairs still to label, in order (neither labelled nor skipped)."""
        skipped = set(self.store.skipped())
        return [p for p in self._pos if self.store.grade_of(*p) is None and p not in skipped]

    def counts(self) -> dict[str, int]:
        """``labelled``, ``skipped``, ``remaining`` and ``total`` pairs of the items."""
        labelled = sum(self.store.grade_of(*p) is not None for p in self._pos)
        skipped = sum(p in self._pos for p in self.store.skipped())
        total = len(self._pos)
        return {
            "labelled": labelled,
            "skipped": skipped,
            "remaining": total - labelled - skipped,
            "total": total,
        }

    def _redraw(self) -> None:
        todo = self.remaining()
        self.current = todo[0] if todo else None
        c = self.counts()
        self.progress.value = (
            f"<b>{c['labelled']} of {c['total']} labelled</b>, {c['skipped']} skipped"
        )
        for b in (*self.buttons.values(), self.skip_button):
            b.disabled = self.current is None
        if self.current is None:
            self.query.value = "<b>All pairs done.</b>" + (
                " Skipped pairs: call <code>revisit_skipped()</code>." if c["skipped"] else ""
            )
            self.passage.value = ""
            return
        row = self.items.iloc[self._pos[self.current]]
        self.query.value = (
            f"<div><small>query {html.escape(self.current[0])}</small></div>"
            f"<h3>{html.escape(str(row['query']))}</h3>"
        )
        self.passage.value = (
            f"<div><small>passage {html.escape(self.current[1])}</small></div>"
            f"<div style='white-space: pre-wrap; max-width: 60em'>"
            f"{html.escape(str(row['passage']))}</div>"
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.box._repr_mimebundle_(**kwargs)


# ----------------------------------------------------------------------------- labelling


def _run_folder(run_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, Any]:
    """Judgements, queries, corpus and the judge's scale of an exported golden-set run folder.

    The queries are the run's own as asked (S1's ``normalised`` text, from
    ``stages/s1_queries.parquet``: they may come from a query file), else the dataset's; the
    dataset needs no qrels."""
    from ragnb.core.paths import resolve_path
    from ragnb.io.files import read_beir, read_parquet

    judgements = read_records(run_dir / "judgements.csv")
    manifest = read_json(run_dir / "manifest.json")
    info = manifest.get("dataset") or {}
    if "path" not in info:
        raise InputError("the manifest names no dataset path", path=run_dir / "manifest.json")
    # the manifest names the folder as a report shows it: relative to the project, or ~/...
    folder = resolve_path(os.path.expanduser(info["path"]))
    data = read_beir(folder, split=info.get("split", "test"), qrels="optional")
    s1 = read_parquet(run_dir / "stages" / "s1_queries.parquet")
    queries = (
        s1[["query_id", "normalised"]].rename(columns={"normalised": "text"})
        if {"query_id", "normalised"} <= set(s1.columns)
        else data.queries
    )
    scale = (manifest.get("judge") or {}).get("scale")
    return judgements, queries, data.corpus, scale


def label_pairs(
    source: pd.DataFrame | str | os.PathLike[str],
    labels: str | os.PathLike[str] | None = None,
    *,
    queries: pd.DataFrame | None = None,
    corpus: pd.DataFrame | None = None,
    provenance: pd.DataFrame | None = None,
    n: int = 200,
    seed: int = 0,
    by: Sequence[str] = ("grade", "system"),
    min_per_stratum: int = 2,
    scale: tuple[int, int] | None = None,
) -> LabellingWidget:
    """The labelling view over a calibration sample, writing to a
    :class:`~ragnb.studies.golden.labelling.LabelStore`.

    The sample is drawn once (:func:`~ragnb.studies.golden.labelling.calibration_sample`) and
    written to ``<labels>.sample.jsonl``; reopening reuses that file (delete it to draw again), so
    the person resumes on the same pairs.

    Parameters
    ----------
    source : DataFrame or str or PathLike
        The judge's grades (see :func:`~ragnb.studies.golden.labelling.calibration_sample`), or an
        exported golden-set run folder (``judgements.csv`` and ``manifest.json``, whose dataset
        gives the texts and whose judge gives the scale), or rows to label as they are: a frame
        holding ``query`` and ``passage`` (:func:`~ragnb.studies.golden.labelling.pair_items`'s
        columns, e.g. the audit rows of :func:`ragnb.studies.golden.audit.audit_sample`) is shown in
        its order, no sample drawn (only ``labels`` and ``scale`` apply).
    labels : str or PathLike, optional
        The labels file; default ``<run folder>/human.qrels`` (required for frames).
    queries : DataFrame, optional
        ``query_id``, ``text``; required with frames.
    corpus : DataFrame, optional
        ``doc_id``, ``text`` (``title`` optional); required with frames.
    provenance, n, seed, by, min_per_stratum
        As :func:`~ragnb.studies.golden.labelling.calibration_sample`.
    scale : (int, int), optional
        Grade scale of the buttons; default the judge's (run folder) or the grades' range.

    Returns
    -------
    LabellingWidget
        Display it in a notebook cell; ``widget.store.labelled()`` holds what is saved.
    """
    if isinstance(source, pd.DataFrame) and {"query", "passage"} <= set(source.columns):
        if labels is None:
            raise InputError("with rows to label, give the labels file")
        shown = source.get("judge_grade", pd.Series(dtype=float))
        grades = pd.to_numeric(shown, errors="coerce").dropna()
        default = _scale_of(grades) if len(grades) else (0, 2)  # the widget's own default
        return LabellingWidget(source, LabelStore(labels), scale=scale or default)
    if isinstance(source, pd.DataFrame):
        judgements = source
        if labels is None or queries is None or corpus is None:
            raise InputError("with frames, give labels, queries and corpus")
    else:
        run_dir = Path(source)
        judgements, queries, corpus, found = _run_folder(run_dir)
        labels = run_dir / "human.qrels" if labels is None else labels
        scale = scale if scale is not None or found is None else (int(found[0]), int(found[1]))
        if provenance is None and (run_dir / "pool_provenance.csv").exists():
            provenance = read_records(run_dir / "pool_provenance.csv")
    store = LabelStore(labels)
    sample = store.read_sample()
    if sample is None:
        sample = calibration_sample(
            judgements,
            n=n,
            seed=seed,
            by=by,
            provenance=provenance,
            min_per_stratum=min_per_stratum,
        )
        store.write_sample(sample)
    else:
        log.info("%s: reusing the sample of %d pairs", store.sample_path, len(sample))
    return LabellingWidget(
        pair_items(sample, queries, corpus), store, scale=scale or _scale_of(sample["grade"])
    )


def _scale_of(grades: pd.Series) -> tuple[int, int]:
    lo, hi = int(grades.min()), int(grades.max())
    return (min(lo, 0), max(hi, min(lo, 0) + 1))


# ----------------------------------------------------------------------------- audit


def audit_view(
    source: GoldenSet | pd.DataFrame,
    labels: str | os.PathLike[str] | None = None,
    *,
    top_n: int | None = None,
    scale: Scale | None = None,
) -> LabellingWidget:
    """The audit rows in the labelling view (:func:`label_pairs`).

    Rows that already hold a ``human_grade`` (read back from a filled CSV) are left out. The labels
    go to a :class:`~ragnb.studies.golden.labelling.LabelStore` whose sample table records the
    audit's design, so the file reads as audit labels
    (:func:`~ragnb.studies.golden.audit.fold_audit` takes it as it is).

    Parameters
    ----------
    source : GoldenSet or DataFrame
        A golden set (rows of :func:`~ragnb.studies.golden.audit.audit_sample` at ``top_n``), or
        audit rows (:func:`~ragnb.studies.golden.audit.audit_sample`,
        :func:`~ragnb.studies.golden.audit.read_audit`).
    labels : str or PathLike, optional
        Default ``<run folder>/audit.qrels`` (a golden set with a run folder only).
    top_n : int, optional
    scale : (int, int), optional
        Grade buttons; default the judge's (``rows.attrs["scale"]``), else the grades' range.

    Returns
    -------
    LabellingWidget
    """
    rows, labels = audit_source(source, labels, top_n, AUDIT_LABELS)
    scale = scale if scale is not None else rows.attrs.get("scale")
    todo = rows[rows["human_grade"].isna()] if "human_grade" in rows.columns else rows
    widget = label_pairs(todo.reset_index(drop=True), labels, scale=scale)
    record_audit_design(rows.rename(columns={"judge_grade": "grade"}), widget.store)
    return widget
