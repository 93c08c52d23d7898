"""Human labels for calibrating a judge: a stratified sample, a crash-safe store, a widget.

- :func:`calibration_sample` draws the pairs to label from the judge's grades of the pool,
  stratified by the judge's grade and by the systems that retrieved each pair, and records each
  pair's inclusion probability so that estimates can be weighted
  (:func:`ragnb.ppi.ppi_system_estimates`'s ``inclusion``).
- :class:`LabelStore` keeps the labels as a TREC qrels file that only grows by whole lines: a
  killed kernel loses at most the label being typed, and reopening resumes where the person
  stopped.
- :class:`LabellingWidget` shows one query and one passage at a time in JupyterLab, with the
  grade scale as buttons and keys, skip, undo, progress, and the judge's grade shown only once the
  person has answered (so it cannot anchor them).
- :func:`label_pairs` builds the widget from a golden-set run folder, from frames, or from rows
  that already hold the texts (:func:`pair_items`; the audit rows of
  :func:`ragnb.golden.audit.audit_sample`).

Files
-----
Beside the labels file ``<labels>`` (``labels.qrels`` say):

============================== ================================================================
``<labels>``                   TREC qrels ``qid 0 docid grade``, one line per labelled pair,
                               readable by :func:`ragnb.readers.read_qrels` at any moment
``<labels>.skipped.jsonl``     pairs skipped (``{"query_id": ..., "doc_id": ...}`` a line)
``<labels>.sample.jsonl``      the sample: ``query_id, doc_id, stratum, inclusion_probability,
                               grade, systems`` (written once; reused when reopening)
``<labels>.torn``              a torn last line found on opening, set aside (:class:`AppendLog`)
============================== ================================================================

Writes
------
A new label is appended as one whole line with :class:`ragnb.io.AppendLog` (one ``write(2)`` on
a file opened ``O_APPEND``), so the file holds every label given before a crash and nothing
half-written; a torn last line (a write cut short by a power loss) is moved aside on opening and
never parsed as a label. Undo, and a new grade for a pair already labelled (the latest label of
a pair wins), rewrite the file through :func:`ragnb.io.atomic_write` (a temporary file renamed
over it): a crash leaves the old file or the new one, never a mix. The labels file therefore
never holds two lines for one pair and stays a plain qrels file; a retraction record would have
kept appends only but made the file unreadable by TREC tools.

References
----------
.. [1] W. G. Cochran, *Sampling Techniques*, 3rd ed., Wiley, 1977, Section 5.5 (proportional
   allocation in stratified random sampling).
.. [2] A. N. Angelopoulos et al., "Prediction-powered inference", Science 382, 2023 (weights from
   inclusion probabilities).
.. [3] J. Bergum, "Improving retrieval with LLM-as-a-judge", Vespa blog, 2024 (calibrating the
   judge on a few human labels).
"""

from __future__ import annotations

import html
import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.io import AppendLog, atomic_write, read_json, read_records, write_records
from ragnb.lazylibs import require
from ragnb.readers import read_qrels
from ragnb.validation import check_positive_int, require_columns

__all__ = ["LabelStore", "LabellingWidget", "calibration_sample", "label_pairs", "pair_items"]

log = logging.getLogger("ragnb.golden.labelling")

SAMPLE_COLUMNS = ["query_id", "doc_id", "stratum", "inclusion_probability", "grade", "systems"]
Pair = tuple[str, str]


# ----------------------------------------------------------------------------- sampling


def _systems_of(judgements: pd.DataFrame, provenance: pd.DataFrame | None) -> list[str]:
    """Each pair's systems as one sorted ``"+"``-joined name (``"bm25+dense"``)."""
    if provenance is not None:
        require_columns(provenance, ("query_id", "doc_id", "system"), "provenance")
        grouped = provenance.astype({"query_id": str, "doc_id": str, "system": str}).groupby(
            ["query_id", "doc_id"]
        )["system"]
        names = grouped.agg(lambda s: "+".join(sorted(set(s))))
        keys = zip(judgements["query_id"], judgements["doc_id"], strict=True)
        return [names.get((q, d), "") for q, d in keys]
    col = "system" if "system" in judgements.columns else "systems"
    if col not in judgements.columns:
        raise InputError(
            "judgements need a 'system' or 'systems' column, or pass provenance "
            "(query_id, doc_id, system: the pool's provenance)"
        )
    return [
        "+".join(sorted({s.strip() for s in str(v).replace("+", ",").split(",") if s.strip()}))
        for v in judgements[col].fillna("")
    ]


def _allocate(sizes: np.ndarray, n: int, min_per_stratum: int) -> np.ndarray:
    """Sample sizes per stratum: at least ``min(min_per_stratum, N_h)``, then one unit at a time
    to the stratum furthest below its proportional share ``n N_h / N`` (ties: first stratum)."""
    alloc = np.minimum(sizes, min_per_stratum)
    if alloc.sum() > n:
        raise InputError(
            f"n={n} is too small for {len(sizes)} strata with at least {min_per_stratum} each "
            f"(need {int(alloc.sum())}); raise n or lower min_per_stratum"
        )
    share = n * sizes / sizes.sum()
    for _ in range(n - int(alloc.sum())):
        gap = np.where(alloc < sizes, share - alloc, -np.inf)
        alloc[int(np.argmax(gap))] += 1
    return alloc


def calibration_sample(
    judgements: pd.DataFrame,
    *,
    n: int,
    seed: int,
    by: Sequence[str] = ("grade", "system"),
    provenance: pd.DataFrame | None = None,
    min_per_stratum: int = 2,
) -> pd.DataFrame:
    """A stratified random sample of judged pairs for human labelling, with its probabilities.

    Strata are the judge's grade crossed with the set of systems that retrieved the pair (a pair
    found by BM25 and the dense system is in stratum ``grade=2|system=bm25+dense``, apart from
    those found by one system only, so the strata partition the pool). Allocation is
    proportional to the stratum sizes ``N_h`` with at least ``min(min_per_stratum, N_h)`` pairs
    in every non-empty stratum: the remaining units go one at a time to the stratum furthest
    below ``n N_h / N``. Within a stratum the pairs are a simple random sample without
    replacement, so each has inclusion probability ``n_h / N_h``; the sample comes back in a
    random order (strata mixed, so the order gives nothing away).

    Parameters
    ----------
    judgements : DataFrame
        The judge's grades of the pool: ``query_id``, ``doc_id``, ``grade`` (int), and a
        ``system`` or ``systems`` column (one system, or several joined by ``,`` or ``+``, as
        :attr:`ragnb.golden.GoldenSet.judgements` holds) unless ``provenance`` is given.
    n : int
        Sample size, at least 1; all pairs (probability 1) when ``n`` is not below their number.
    seed : int
        Seed of :func:`numpy.random.default_rng`: the same inputs and seed give the same sample.
    by : sequence of {"grade", "system"}, default ("grade", "system")
        What the strata are made of; ``()`` draws a simple random sample.
    provenance : DataFrame, optional
        ``query_id, doc_id, system`` (the pool's provenance, ``pool_provenance.csv``): which
        systems retrieved each pair; overrides a ``system(s)`` column.
    min_per_stratum : int, default 2
        Smallest sample of a non-empty stratum (all of it when smaller).

    Returns
    -------
    DataFrame
        ``query_id``, ``doc_id`` (str), ``stratum`` (str), ``inclusion_probability`` (float in
        (0, 1], ``n_h / N_h``), ``grade`` (the judge's, int), ``systems`` (str); ``n`` rows (or
        all pairs). ``attrs`` holds ``n``, ``seed``, ``by`` and the population size.

    Raises
    ------
    InputError
        On missing columns, duplicate pairs, an unknown ``by``, ``n < 1``, or ``n`` too small to
        give every stratum ``min_per_stratum`` pairs.

    Examples
    --------
    >>> j = pd.DataFrame({"query_id": list("aabbcc"), "doc_id": list("xyxyxy"),
    ...                   "grade": [0, 0, 0, 0, 2, 2], "system": ["bm25"] * 6})
    >>> s = calibration_sample(j, n=3, seed=0, min_per_stratum=1)
    >>> sorted(zip(s["stratum"], s["inclusion_probability"].round(3)))
    [('grade=0|system=bm25', 0.5), ('grade=0|system=bm25', 0.5), ('grade=2|system=bm25', 0.5)]
    """
    missing = {"query_id", "doc_id", "grade"} - set(judgements.columns)
    if missing:
        raise InputError(f"judgements lack columns {sorted(missing)}")
    unknown = set(by) - {"grade", "system"}
    if unknown:
        raise InputError(f"unknown strata {sorted(unknown)}; use 'grade' and/or 'system'")
    n = check_positive_int(n, "n")
    if judgements["grade"].isna().any():
        raise InputError("judgements hold a missing grade; keep valid grades only", column="grade")
    pop = pd.DataFrame(
        {
            "query_id": judgements["query_id"].astype(str).to_numpy(dtype=object),
            "doc_id": judgements["doc_id"].astype(str).to_numpy(dtype=object),
            "grade": judgements["grade"].astype(np.int64).to_numpy(),
        }
    )
    dup = pop.duplicated(["query_id", "doc_id"])
    if dup.any():
        q, d = pop.loc[dup.idxmax(), ["query_id", "doc_id"]]
        raise InputError(f"judgements hold the pair ({q!r}, {d!r}) twice", query_id=q)
    has_system = provenance is not None or {"system", "systems"} & set(judgements.columns)
    pop["systems"] = _systems_of(judgements, provenance) if has_system else ""
    parts = []
    if "grade" in by:
        parts.append("grade=" + pop["grade"].astype(str))
    if "system" in by:
        if not has_system:
            raise InputError("stratifying by system needs a system(s) column or provenance")
        parts.append("system=" + pop["systems"].astype(str))
    pop["stratum"] = ["|".join(t) for t in zip(*parts, strict=True)] if parts else "all"
    strata = sorted(pop["stratum"].unique())
    sizes = np.array([(pop["stratum"] == h).sum() for h in strata], dtype=np.int64)
    rng = np.random.default_rng(seed)
    alloc = sizes if n >= len(pop) else _allocate(sizes, n, min_per_stratum)
    picked = []
    for h, size, take in zip(strata, sizes, alloc, strict=True):
        rows = np.flatnonzero((pop["stratum"] == h).to_numpy())
        chosen = rows[np.sort(rng.choice(size, size=int(take), replace=False))]
        picked.append(pop.iloc[chosen].assign(inclusion_probability=take / size))
    out = pd.concat(picked, ignore_index=True)
    out = out.iloc[rng.permutation(len(out))].reset_index(drop=True)[SAMPLE_COLUMNS]
    out.attrs.update({"n": n, "seed": seed, "by": list(by), "population": len(pop)})
    return out


# ----------------------------------------------------------------------------- store


def _check_id(value: Any, what: str) -> str:
    text = str(value)
    if not text or any(c.isspace() for c in text):
        raise InputError(f"{what} {text!r} is empty or holds white space: not a TREC qrels id")
    return text


class LabelStore:
    """Human labels as a TREC qrels file that survives a killed kernel; skips beside it.

    Opening isolates a torn last line (moved to ``<path>.torn``, never read as a label) and reads
    what is saved. See the module's *Files* and *Writes* for the layout and the guarantees.

    Parameters
    ----------
    path : str or PathLike
        The labels file (TREC qrels, ``qid 0 docid grade``); created on the first label.
    fsync : bool, default False
        ``fsync`` after each label (survives a power loss as well as a killed process).

    Attributes
    ----------
    path, skipped_path, sample_path : Path
    torn : int
        Torn lines set aside when opening (0 or 1 per file).
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.path = Path(path)
        self.skipped_path = self.path.with_name(self.path.name + ".skipped.jsonl")
        self.sample_path = self.path.with_name(self.path.name + ".sample.jsonl")
        self._labels_log = AppendLog(self.path, fsync=fsync)
        self._skips_log = AppendLog(self.skipped_path, fsync=fsync)
        self.torn = self._labels_log.repair() + self._skips_log.repair()
        self._labels: dict[Pair, int] = {}
        if self.path.exists():
            q = read_qrels(self.path)
            for qid, did, rel in zip(q["query_id"], q["doc_id"], q["relevance"], strict=True):
                self._labels[(str(qid), str(did))] = int(rel)
        self._skipped: dict[Pair, None] = {}
        if self.skipped_path.exists() and self.skipped_path.stat().st_size:
            s = read_records(self.skipped_path)
            for qid, did in zip(s["query_id"], s["doc_id"], strict=True):
                self._skipped[(str(qid), str(did))] = None

    # -- reading

    def labelled(self) -> pd.DataFrame:
        """The saved labels in the order given: ``query_id``, ``doc_id``, ``relevance``
        (int64), as :func:`ragnb.readers.read_qrels` returns them."""
        rows = [(q, d, g) for (q, d), g in self._labels.items()]
        frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
        return frame.astype({"query_id": object, "doc_id": object, "relevance": np.int64})

    def grade_of(self, query_id: Any, doc_id: Any) -> int | None:
        """The saved label of a pair, or None."""
        return self._labels.get((str(query_id), str(doc_id)))

    def skipped(self) -> list[Pair]:
        """The skipped pairs ``(query_id, doc_id)`` not labelled since, in skip order."""
        return [p for p in self._skipped if p not in self._labels]

    def __len__(self) -> int:
        return len(self._labels)

    # -- writing

    def label(self, query_id: Any, doc_id: Any, grade: int) -> None:
        """Save a label: one appended line, or an atomic rewrite when the pair had one (the
        latest label wins and moves to the end)."""
        pair = (_check_id(query_id, "query id"), _check_id(doc_id, "doc id"))
        if isinstance(grade, bool) or not isinstance(grade, int | np.integer):
            raise InputError(f"a grade is an integer, got {grade!r}")
        if pair in self._labels:
            del self._labels[pair]
            self._labels[pair] = int(grade)
            self._rewrite_labels()
        else:
            self._labels_log.append(f"{pair[0]} 0 {pair[1]} {int(grade)}")
            self._labels[pair] = int(grade)

    def retract(self, query_id: Any, doc_id: Any) -> int | None:
        """Remove a pair's label (atomic rewrite); its grade, or None when it had none."""
        grade = self._labels.pop((str(query_id), str(doc_id)), None)
        if grade is not None:
            self._rewrite_labels()
        return grade

    def skip(self, query_id: Any, doc_id: Any) -> None:
        """Record a skip (one appended line)."""
        pair = (_check_id(query_id, "query id"), _check_id(doc_id, "doc id"))
        if pair not in self._skipped:
            self._skips_log.append(json.dumps({"query_id": pair[0], "doc_id": pair[1]}))
            self._skipped[pair] = None

    def unskip(self, pairs: Iterable[Pair] | None = None) -> None:
        """Forget skips (all when ``pairs`` is None), rewriting the skips file atomically."""
        drop = set(self._skipped) if pairs is None else {(str(q), str(d)) for q, d in pairs}
        if not drop & set(self._skipped):
            return
        self._skipped = {p: None for p in self._skipped if p not in drop}
        self._skips_log.close()  # the rename replaces the file: append to the new one next
        frame = pd.DataFrame(list(self._skipped), columns=["query_id", "doc_id"])
        with atomic_write(self.skipped_path) as f:
            f.write(frame.to_json(orient="records", lines=True, force_ascii=False))

    def _rewrite_labels(self) -> None:
        self._labels_log.close()  # the rename replaces the file: append to the new one next
        with atomic_write(self.path) as f:
            f.writelines(f"{q} 0 {d} {g}\n" for (q, d), g in self._labels.items())

    def write_sample(self, sample: pd.DataFrame) -> None:
        """Write the sample and its inclusion probabilities to ``sample_path`` (JSON lines, so
        ids keep their leading zeros; atomically)."""
        write_records(sample, self.sample_path)

    def read_sample(self) -> pd.DataFrame | None:
        """The sample written by :meth:`write_sample`, or None."""
        if not self.sample_path.exists():
            return None
        frame = read_records(self.sample_path)
        return (
            frame.astype({"query_id": str, "doc_id": str}).astype(
                {"query_id": object, "doc_id": object}
            )
            if len(frame)
            else None
        )

    def close(self) -> None:
        """Close the files (reopened by the next write)."""
        self._labels_log.close()
        self._skips_log.close()


# ----------------------------------------------------------------------------- widget


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


# ----------------------------------------------------------------------------- helper


def _run_folder(run_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, Any]:
    """Judgements, queries, corpus and the judge's scale of an exported golden-set run folder.

    The queries are the run's own as asked (S1's ``normalised`` text, from
    ``stages/s1_queries.parquet``: they may come from a query file), else the dataset's; the
    dataset needs no qrels."""
    from ragnb.io import read_beir, read_parquet
    from ragnb.paths import resolve_path

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
    """The labelling view over a calibration sample, writing to a :class:`LabelStore`.

    The sample is drawn once (:func:`calibration_sample`) and written to
    ``<labels>.sample.jsonl``; reopening reuses that file (delete it to draw again), so the
    person resumes on the same pairs.

    Parameters
    ----------
    source : DataFrame or str or PathLike
        The judge's grades (see :func:`calibration_sample`), or an exported golden-set run
        folder (``judgements.csv`` and ``manifest.json``, whose dataset gives the texts and whose
        judge gives the scale), or rows to label as they are: a frame holding ``query`` and
        ``passage`` (:func:`pair_items`'s columns, e.g. the audit rows of
        :func:`ragnb.golden.audit.audit_sample`) is shown in its order, no sample drawn (only
        ``labels`` and ``scale`` apply).
    labels : str or PathLike, optional
        The labels file; default ``<run folder>/human.qrels`` (required for frames).
    queries : DataFrame, optional
        ``query_id``, ``text``; required with frames.
    corpus : DataFrame, optional
        ``doc_id``, ``text`` (``title`` optional); required with frames.
    provenance, n, seed, by, min_per_stratum
        As :func:`calibration_sample`.
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


def pair_items(pairs: pd.DataFrame, queries: pd.DataFrame, corpus: pd.DataFrame) -> pd.DataFrame:
    """Pairs with the texts the labelling view shows, in the pairs' order.

    Parameters
    ----------
    pairs : DataFrame
        ``query_id``, ``doc_id``, ``grade`` (the judge's, int).
    queries : DataFrame
        ``query_id``, ``text``; a query without text shows as empty.
    corpus : DataFrame
        ``doc_id``, ``text``, ``title`` (optional).

    Returns
    -------
    DataFrame
        ``query_id``, ``doc_id`` (str), ``query``, ``passage`` (the title, a blank line, the
        text), ``judge_grade``; one row per pair.

    Raises
    ------
    InputError
        When a document is not in the corpus.
    """
    qtext: Mapping[str, str] = dict(
        zip(queries["query_id"].astype(str), queries["text"].astype(str), strict=True)
    )
    titles = corpus["title"].fillna("") if "title" in corpus else pd.Series("", index=corpus.index)
    ptext = dict(
        zip(
            corpus["doc_id"].astype(str),
            (titles.astype(str) + "\n\n" + corpus["text"].astype(str)).str.strip(),
            strict=True,
        )
    )
    missing = sorted(set(pairs["doc_id"].astype(str)) - set(ptext))
    if missing:
        raise InputError(f"{len(missing)} documents are not in the corpus: {missing[0]!r}")
    return pd.DataFrame(
        {
            "query_id": pairs["query_id"].astype(str).to_numpy(dtype=object),
            "doc_id": pairs["doc_id"].astype(str).to_numpy(dtype=object),
            "query": [qtext.get(str(q), "") for q in pairs["query_id"]],
            "passage": [ptext[str(d)] for d in pairs["doc_id"]],
            "judge_grade": pairs["grade"].to_numpy(),
        }
    )
