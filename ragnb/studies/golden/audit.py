"""Audit of the refined top: export it for people, read their grades back, fold them in.

S6 ends with a refined top ``top_n`` per query, ordered and graded by the judge. The audit puts
those pairs before a person, who checks the judge's grade of each, and folds what they say back
into the golden set:

1. :func:`audit_sample` gives one row per pair of the refined top (the texts, the judge's
   grade, the refined rank and score, an empty ``human_grade``);
2. :func:`export_audit` writes them as a CSV to fill in a spreadsheet, and
   :func:`ragnb.studies.golden.labelling_view.audit_view` opens the same rows in the labelling view
   (which shows the judge's grade only once the person has answered; the CSV shows it, since an
   audit checks it);
3. :func:`read_audit` reads the filled CSV back (an empty ``human_grade``: not audited);
4. :func:`fold_audit` records the audited grades as human labels and puts them into the golden
   qrels in place of the judge's.

Files
-----
Beside the golden set's products in its run folder:

===================================== ===========================================================
``audit_top.csv``                     the rows to fill (:data:`AUDIT_COLUMNS`); exporting again
                                      keeps every ``human_grade`` already in the file
``audit.qrels``                       the audited grades as TREC qrels (a
                                      :class:`~ragnb.studies.golden.labelling.LabelStore`: the view
                                      writes here too), readable as ``human_labels``
``audit.qrels.sample.jsonl``          the design: every audited pair with ``stratum`` "refined
                                      top", ``inclusion_probability`` 1, the judge's ``grade`` and
                                      ``design`` = :data:`ragnb.studies.golden.human.AUDIT_DESIGN`
===================================== ===========================================================

What the audit is good for
--------------------------
The audited pairs are the refined top: chosen by the judge's own ranking, each with certainty,
and the rest of the pool never. So:

* they **correct the golden qrels**: an audited grade replaces the judge's for that pair
  (``judgements`` ``source`` "audit"), so the top of the golden set, the part every measure at
  small K reads, carries human grades;
* they **may serve PPI as part of its predictions**: prediction-powered inference stays unbiased for
  any predictions fixed before the random labelled sample is drawn, and the folded qrels (a person's
  grade where audited, the judge's elsewhere) are such predictions, better ones where they differ; a
  calibration sample (:func:`~ragnb.studies.golden.labelling.calibration_sample`) of the whole pool
  still provides the labelled sample;
* they **may not serve PPI as its labelled sample**: weighting them by ``1 / 1`` as if drawn at
  random would estimate the judge's error on its top, where relevant pairs abound, as its error
  everywhere. Read as ``human_labels`` they are marked as an audit
  (:attr:`~ragnb.studies.golden.human.HumanLabels.audit`) and
  :func:`~ragnb.studies.golden.human.ppi_estimates` refuses them with a note;
* calibration (:func:`~ragnb.studies.golden.evaluation.calibrate_judge`) may compare the judge with
  them, on its top only; do it before folding, since afterwards the golden qrels hold these very
  grades.

A golden set rebuilt from its stages holds the judge's grades again: fold again (the labels
file already holds the grades, so folding it changes nothing else).

References
----------
.. [1] E. Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and
   Cost-Latency-Quality Trade-offs", arXiv:2511.09545, 2025, Section 3.4 (the refined top of
   rag-gs, meant for human review).
.. [2] A. N. Angelopoulos et al., "Prediction-powered inference", Science 382, 2023 (unbiased
   for any fixed predictions; the labelled sample must be drawn at random).
"""

from __future__ import annotations

import csv
import io
import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ragnb.core.validation import check_positive_int, require_columns
from ragnb.errors import InputError
from ragnb.io.files import cell_for_spreadsheet, write_table_csv
from ragnb.io.readers import read_qrels
from ragnb.studies.golden.human import AUDIT_DESIGN, AUDIT_NOTE, HumanLabels
from ragnb.studies.golden.labelling import LabelStore, pair_items

if TYPE_CHECKING:
    from ragnb.studies.golden.goldenset import GoldenSet

__all__ = [
    "AUDIT_COLUMNS",
    "AUDIT_LABELS",
    "audit_markdown",
    "audit_rows",
    "audit_sample",
    "audit_source",
    "export_audit",
    "fold_audit",
    "read_audit",
    "record_audit_design",
]

log = logging.getLogger("ragnb.studies.golden.audit")

#: The audit CSV's columns, in order: what a person reads first, the long texts last.
AUDIT_COLUMNS = [
    "query_id",
    "doc_id",
    "rank",
    "judge_grade",
    "human_grade",
    "score",
    "sigma",
    "query",
    "passage",
]
#: Columns :func:`read_audit` needs; the others are read as they come.
REQUIRED = ("query_id", "doc_id", "human_grade")
#: File names in the run folder.
AUDIT_FILE = "audit_top.csv"
AUDIT_LABELS = "audit.qrels"
Scale = tuple[int, int]


# ----------------------------------------------------------------------------- the rows


def audit_sample(golden: GoldenSet, top_n: int | None = None) -> pd.DataFrame:
    """One row per pair of the refined top ``top_n`` of each query, to audit.

    Parameters
    ----------
    golden : GoldenSet
        A built golden set (S6's ``order``, S1's queries, the pipeline's corpus).
    top_n : int, optional
        Pairs per query (fewer when the pool is smaller); default the pipeline's ``top_n``, the
        stable top of S6. A larger value reaches below the stable top into the refined order.

    Returns
    -------
    DataFrame
        :data:`AUDIT_COLUMNS`: ``query_id``, ``doc_id`` (str), ``rank`` (int, 1-based refined
        rank), ``judge_grade`` (int, S4's grade), ``human_grade`` (Int64, all missing),
        ``score`` (float, the Plackett-Luce score), ``sigma`` (float, its uncertainty),
        ``query`` (S1's text, as the judge read it), ``passage`` (title and text). Queries in
        S6's order, ranks ascending. ``attrs``: ``top_n``, ``scale`` (the judge's, or None),
        ``queries``.

    Raises
    ------
    InputError
        On a ``top_n`` that is not a positive integer.
    """
    n = golden.build.top_n if top_n is None else check_positive_int(top_n, "top_n")
    order = golden.order
    top = order[order["rank"] <= n].reset_index(drop=True)
    queries = golden.queries[["query_id", "normalised"]].rename(columns={"normalised": "text"})
    items = pair_items(top, queries, golden.build.corpus)
    rows = pd.DataFrame(
        {
            "query_id": items["query_id"],
            "doc_id": items["doc_id"],
            "rank": top["rank"].astype(np.int64),
            "judge_grade": top["grade"].astype(np.int64),
            "human_grade": pd.array([pd.NA] * len(top), dtype="Int64"),
            "score": top["score"].astype(np.float64),
            "sigma": top["sigma"].astype(np.float64),
            "query": items["query"],
            "passage": items["passage"],
        }
    )
    scale = golden.judge.scale
    rows.attrs.update(
        {
            "top_n": int(n),  # type: ignore[arg-type]
            "scale": None if scale is None else (int(scale[0]), int(scale[1])),
            "queries": int(rows["query_id"].nunique()),
        }
    )
    return rows


def export_audit(
    source: GoldenSet | pd.DataFrame,
    path: str | os.PathLike[str] | None = None,
    *,
    top_n: int | None = None,
) -> Path:
    """Write the audit rows as a CSV (UTF-8, atomically), keeping grades already given.

    Texts that a spreadsheet would take for a formula (a leading ``=``, ``+``, ``-``, ``@``)
    are written with a ``'`` before them; ids are written as they are (a spreadsheet that
    turns them into numbers, dropping leading zeros, makes the pairs unknown to
    :func:`fold_audit`, which names them). When ``path`` exists, every ``human_grade`` it holds
    survives: a pair still among the rows
    keeps its grade (unless the rows give one), and an audited pair no longer among them (the
    top changed) is kept as its own row at the end. So exporting again, as each render of
    notebook 02 does, never loses a person's work.

    Parameters
    ----------
    source : GoldenSet or DataFrame
        A golden set (rows of :func:`audit_sample` at ``top_n``) or rows with
        :data:`AUDIT_COLUMNS`.
    path : str or PathLike, optional
        Default ``<run folder>/audit_top.csv`` (a golden set with a run folder only).
    top_n : int, optional
        See :func:`audit_sample`.

    Returns
    -------
    Path
        The file written: the rows, then the audited pairs no longer among them.

    Raises
    ------
    InputError
        On rows without :data:`AUDIT_COLUMNS`, no path, or an existing file that
        :func:`read_audit` rejects (the file is left as it is).
    """
    rows, path = audit_source(source, path, top_n, AUDIT_FILE)
    rows = audit_rows(rows, path)
    texts = {
        c: ["" if pd.isna(t) else cell_for_spreadsheet(str(t)) for t in rows[c]]
        for c in ("query", "passage")
    }
    write_table_csv(rows.assign(**texts), path)
    return path


def audit_rows(source: GoldenSet | pd.DataFrame, path: str | os.PathLike[str]) -> pd.DataFrame:
    """The rows :func:`export_audit` writes to ``path``: the audit rows of ``source``
    (:func:`audit_sample` of a golden set, or rows with :data:`AUDIT_COLUMNS`) with every
    ``human_grade`` already in ``path`` kept (see :func:`export_audit`).

    Returns
    -------
    DataFrame
        :data:`AUDIT_COLUMNS`, ``human_grade`` as Int64 (missing: not audited).

    Raises
    ------
    InputError
        On rows without :data:`AUDIT_COLUMNS`, or an existing file :func:`read_audit` rejects.
    """
    rows = source if isinstance(source, pd.DataFrame) else audit_sample(source)
    require_columns(rows, AUDIT_COLUMNS, "the audit rows")
    rows = rows[AUDIT_COLUMNS].astype({"human_grade": "Int64"}).reset_index(drop=True)
    if Path(path).exists():
        rows = _keep_grades(rows, read_audit(path))
    return rows


def audit_source(
    source: GoldenSet | pd.DataFrame,
    path: str | os.PathLike[str] | None,
    top_n: int | None,
    name: str,
) -> tuple[pd.DataFrame, Path]:
    """The audit rows of ``source`` and the file to use.

    Parameters
    ----------
    source : GoldenSet or DataFrame
        A golden set (rows of :func:`audit_sample` at ``top_n``) or audit rows as they are.
    path : str or PathLike, optional
        The file; default ``<run folder>/name``.
    top_n : int, optional
        See :func:`audit_sample`.
    name : str
        The file name in the run folder (``audit_top.csv``, ``audit.qrels``).

    Returns
    -------
    rows : DataFrame
    path : Path

    Raises
    ------
    InputError
        With no path and no run folder.
    """
    if isinstance(source, pd.DataFrame):
        rows = source
    else:
        rows = audit_sample(source, top_n)
        if path is None and source.run_dir is not None:
            path = source.run_dir / name
    if path is None:
        raise InputError(f"give the path of the {name} file (no run folder to put it in)")
    return rows, Path(path)


def _keep_grades(rows: pd.DataFrame, old: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with the grades of ``old`` (an audit file read back) where they have none, and
    the audited rows of ``old`` that ``rows`` lacks appended."""
    done = old[old["human_grade"].notna()]
    if done.empty:
        return rows
    pairs = zip(done["query_id"], done["doc_id"], strict=True)
    given = dict(zip(pairs, done["human_grade"], strict=True))
    keys = list(zip(rows["query_id"], rows["doc_id"], strict=True))
    before = pd.array([given.get(k, pd.NA) for k in keys], dtype="Int64")
    rows = rows.assign(human_grade=rows["human_grade"].fillna(pd.Series(before)))
    present = set(keys)
    gone = done[[k not in present for k in given]]
    log.info("kept %d grades of the existing audit file", len(given))
    if gone.empty:
        return rows
    extra = pd.DataFrame({c: gone[c] if c in gone.columns else pd.NA for c in AUDIT_COLUMNS})
    return pd.concat([rows, extra], ignore_index=True)


# ----------------------------------------------------------------------------- reading back


def _grade(cell: str, scale: Scale | None, path: Path, line: int) -> int | None:
    """A ``human_grade`` cell as an int, None when empty; "2.0" (a spreadsheet's) is 2."""
    text = cell.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value.is_integer():
        raise InputError(
            f"{text!r} is not a grade (an integer; empty: not audited)",
            path=path,
            line=line,
            column="human_grade",
        )
    if scale is not None and not scale[0] <= value <= scale[1]:
        raise InputError(
            f"grade {int(value)} is outside the judge's scale {scale[0]}-{scale[1]}",
            path=path,
            line=line,
            column="human_grade",
        )
    return int(value)


def _records(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """The header and ``(line, fields)`` of each record; a record's line is the physical line
    it starts on (1-based: the header is line 1), so quoted cells spanning lines count."""
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise InputError("not UTF-8 text; save the CSV as UTF-8", path=path, line=line) from None
    n_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    start = 1
    records: list[tuple[int, list[str]]] = []
    try:
        header = [h.strip() for h in next(reader, [])]
        if not any(header):
            raise InputError("empty file: no header line", path=path, line=1)
        if len(set(header)) < len(header):
            dup = next(h for h in header if header.count(h) > 1)
            raise InputError(f"the header names {dup!r} twice", path=path, line=1, column=dup)
        start = reader.line_num + 1
        for fields in reader:
            if fields and any(f.strip() for f in fields):
                if len(fields) != len(header):
                    torn = reader.line_num >= n_lines and not text.endswith("\n")
                    why = "; the file ends inside it: cut short (a torn or partial write?)"
                    raise InputError(
                        f"{len(fields)} cells where the header has {len(header)}"
                        + (why if torn else ""),
                        path=path,
                        line=start,
                    )
                records.append((start, fields))
            start = reader.line_num + 1
    except csv.Error as e:
        torn = "end of data" in str(e) or "EOF" in str(e)
        hint = ": the file ends inside a quoted cell (a torn or partial write?)" if torn else ""
        raise InputError(f"malformed CSV ({e}){hint}", path=path, line=start) from None
    return header, records


def read_audit(path: str | os.PathLike[str], *, scale: Scale | None = None) -> pd.DataFrame:
    """A filled audit CSV (:func:`export_audit`'s, edited by a person) read back and checked.

    Parameters
    ----------
    path : str or PathLike
        UTF-8 CSV (a spreadsheet's byte-order mark is fine) whose header holds at least
        ``query_id``, ``doc_id`` and ``human_grade``; quoted cells may span lines.
    scale : (int, int), optional
        The judge's scale: grades outside it are refused.

    Returns
    -------
    DataFrame
        The file's columns: ``query_id``, ``doc_id`` (str, stripped), ``human_grade`` (Int64,
        missing where the cell is empty: not audited), ``rank`` and ``judge_grade`` (Int64) and
        ``score`` and ``sigma`` (float) when present (unreadable cells missing: they are the
        judge's, not checked), the other columns as text; and ``line`` (int, the line each row
        starts on). ``attrs["path"]`` is the file. Blank lines are skipped.

    Raises
    ------
    InputError
        Naming the file, the line and the column: a missing column, a row whose cell count
        differs from the header's (said to be cut short when the file ends inside it: a torn
        write is never read as grades), an unterminated quote, an empty or space-holding id,
        a pair given twice, a grade that is not an integer or lies outside ``scale``, text
        that is not UTF-8.
    FileNotFoundError
        When ``path`` does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"audit file {path} not found")
    header, records = _records(path)
    for col in REQUIRED:
        if col not in header:
            raise InputError(
                f"missing column {col!r}; the header has {header}", path=path, line=1, column=col
            )
    at = {c: header.index(c) for c in header}
    seen: dict[tuple[str, str], int] = {}
    grades: list[int | None] = []
    for line, fields in records:
        pair = (fields[at["query_id"]].strip(), fields[at["doc_id"]].strip())
        for col, value in zip(("query_id", "doc_id"), pair, strict=True):
            if not value or any(c.isspace() for c in value):
                raise InputError(
                    f"{value!r} is empty or holds white space: not an id",
                    path=path,
                    line=line,
                    column=col,
                )
        if pair in seen:
            raise InputError(
                f"the pair ({pair[0]!r}, {pair[1]!r}) is also on line {seen[pair]}",
                path=path,
                line=line,
                column="doc_id",
            )
        seen[pair] = line
        grades.append(_grade(fields[at["human_grade"]], scale, path, line))
    frame = pd.DataFrame([f for _, f in records], columns=header, dtype=object)
    frame["query_id"] = [q for q, _ in seen]
    frame["doc_id"] = [d for _, d in seen]
    frame["human_grade"] = pd.array(grades, dtype="Int64")
    for col, kind in (("rank", "Int64"), ("judge_grade", "Int64")):
        if col in frame.columns:
            frame[col] = pd.to_numeric(frame[col], errors="coerce").round().astype(kind)
    for col in ("score", "sigma"):
        if col in frame.columns:
            frame[col] = pd.to_numeric(frame[col], errors="coerce").astype(np.float64)
    frame["line"] = np.array([line for line, _ in records], dtype=np.int64)
    frame.attrs["path"] = str(path)
    return frame


# ----------------------------------------------------------------------------- the view


def record_audit_design(pairs: pd.DataFrame, store: LabelStore) -> pd.DataFrame:
    """The audit's design table (``store``'s sample table) with ``pairs`` added to what it held,
    written and returned, so the labels file reads as audit labels.

    Parameters
    ----------
    pairs : DataFrame
        ``query_id``, ``doc_id``, ``grade`` (the judge's).
    store : LabelStore

    Returns
    -------
    DataFrame
        :data:`ragnb.studies.golden.labelling.SAMPLE_COLUMNS` and ``design`` (every inclusion
        probability 1, stratum "refined top").
    """
    table = pd.DataFrame(
        {
            "query_id": pairs["query_id"].astype(str).to_numpy(dtype=object),
            "doc_id": pairs["doc_id"].astype(str).to_numpy(dtype=object),
            "stratum": "refined top",
            "inclusion_probability": 1.0,
            "grade": pd.array(pairs["grade"], dtype="Int64"),
            "systems": "",
            "design": AUDIT_DESIGN,
        }
    )
    held = store.read_sample()
    if held is not None:
        table = pd.concat([held, table], ignore_index=True)
        table = table.drop_duplicates(["query_id", "doc_id"], keep="last")
    table = table.reset_index(drop=True)
    if len(table):
        store.write_sample(table)
    return table


# ----------------------------------------------------------------------------- folding


def _audited(audit: Any, scale: Scale | None) -> pd.DataFrame:
    """The audited pairs of ``audit`` (a CSV, a qrels file, or a frame): ``query_id``,
    ``doc_id``, ``human_grade`` (int64), ``line`` (Int64: where, in a CSV)."""
    where: Any = None
    if isinstance(audit, pd.DataFrame):
        frame = audit.rename(columns={"relevance": "human_grade"})
    elif Path(audit).suffix.lower() == ".csv":
        frame = read_audit(audit, scale=scale)
        where = audit
    else:
        frame = read_qrels(audit).rename(columns={"relevance": "human_grade"})
        where = audit
    require_columns(frame, ("query_id", "doc_id", "human_grade"), "the audit", path=where)
    lines = frame["line"] if "line" in frame.columns else pd.Series(pd.NA, index=frame.index)
    grade = pd.to_numeric(frame["human_grade"], errors="coerce")
    bad = frame["human_grade"].notna() & (grade.isna() | (grade % 1 != 0))
    if scale is not None:
        bad |= grade.notna() & ~grade.between(scale[0], scale[1])
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        line = None if pd.isna(lines.iloc[i]) else int(lines.iloc[i])
        raise InputError(
            f"grade {frame['human_grade'].iloc[i]!r} is not an integer on the judge's scale "
            f"{scale}",
            path=where,
            line=line,
            query_id=str(frame["query_id"].iloc[i]),
            column="human_grade",
        )
    done = grade.notna().to_numpy()
    return pd.DataFrame(
        {
            "query_id": frame["query_id"].astype(str).to_numpy(dtype=object)[done],
            "doc_id": frame["doc_id"].astype(str).to_numpy(dtype=object)[done],
            "human_grade": grade.to_numpy()[done].astype(np.int64),
            "line": pd.array(lines.to_numpy()[done], dtype="Int64"),
        }
    ).assign(where=str(where) if where is not None else None)


def fold_audit(
    golden: GoldenSet,
    audit: pd.DataFrame | str | os.PathLike[str],
    *,
    labels: str | os.PathLike[str] | None = None,
    export: bool = True,
) -> tuple[GoldenSet, HumanLabels]:
    """Fold audited grades into the golden set: human labels, and the golden qrels' grades.

    For every audited pair (a ``human_grade`` given): the grade is saved in the labels file (a
    :class:`~ragnb.studies.golden.labelling.LabelStore`; a new grade for a pair replaces the old),
    the file's sample table records the audit's design (see the module: what PPI may and may not use
    these labels for), and the returned golden set's ``judgements`` take the grade with ``source``
    "audit", so its :attr:`GoldenSet.qrels` and the exported ``golden.qrels`` hold the person's
    grade there and the judge's elsewhere. Every label of the file is folded, so a golden set
    rebuilt from its stages gets all its audits back from one call.

    Parameters
    ----------
    golden : GoldenSet
        Left as it is (a golden set is a value).
    audit : DataFrame or str or PathLike
        A filled audit CSV (``.csv``: :func:`read_audit` with the judge's scale), a labels file
        (TREC qrels: the view's, :func:`ragnb.studies.golden.labelling_view.audit_view`), or a frame
        with ``query_id``, ``doc_id`` and ``human_grade`` (or ``relevance``); missing grades are not
        audited.
    labels : str or PathLike, optional
        The audit labels file; default ``<run folder>/audit.qrels``; without one and without a
        run folder the labels are only returned.
    export : bool, default True
        Rewrite the run folder's products (:meth:`GoldenSet.export`) when there is one.

    Returns
    -------
    golden : GoldenSet
        ``golden`` with the audited grades in its judgements.
    labels : HumanLabels
        ``qrels``: every audit label of the file (or of ``audit``), on the judge's scale;
        ``sample``: the design table (``grade`` the judge's); ``audit`` True; ``notes`` say how
        many grades changed.

    Raises
    ------
    InputError
        On a grade that is not an integer on the judge's scale, or a pair outside the golden
        set's refined order (naming the file, line and query when they are known).
    """
    scale = golden.judge.scale
    found = _audited(audit, scale)
    order = golden.order.astype({"query_id": str, "doc_id": str})
    judge = order.set_index(["query_id", "doc_id"])["grade"]
    for q, d, line, where in found[["query_id", "doc_id", "line", "where"]].itertuples(index=False):
        if (q, d) not in judge.index:
            raise InputError(
                f"document {d!r} is not in the golden set's refined order for this query",
                path=where,
                line=None if pd.isna(line) else int(line),
                query_id=q,
            )
    path = labels
    if path is None and golden.run_dir is not None:
        path = golden.run_dir / AUDIT_LABELS
    if path is not None:
        store = LabelStore(path)
        for q, d, g in found[["query_id", "doc_id", "human_grade"]].itertuples(index=False):
            if store.grade_of(q, d) != g:
                store.label(q, d, int(g))
        recorded = store.labelled()
        record_audit_design(found.assign(grade=judge.reindex(_keys(found)).to_numpy()), store)
        design = store.read_sample()
        store.close()
    else:
        recorded = found[["query_id", "doc_id", "human_grade"]].rename(
            columns={"human_grade": "relevance"}
        )
        design = None
    inside = [k in judge.index for k in _keys(recorded)]
    notes = []
    if not all(inside):
        notes.append(
            f"{len(inside) - sum(inside)} labels of the file concern pairs outside "
            "this golden set's refined order: left out"
        )
    recorded = recorded.loc[np.array(inside, dtype=bool)].reset_index(drop=True)
    judgements, changed = _override(golden, recorded)
    golden = replace(golden, judgements=judgements)
    if export and golden.run_dir is not None:
        golden.export()
    notes.insert(
        0,
        f"audited pairs: {len(recorded)}, in {recorded['query_id'].nunique()} queries; grades "
        f"that differ from the judge's: {changed}. The golden qrels hold the person's grade for "
        "every audited pair (judgements source 'audit')",
    )
    source = f"an audit of the refined top ({len(recorded)} pairs)"
    return golden, HumanLabels(recorded, source, design, None, [*notes, AUDIT_NOTE], True)


def _keys(frame: pd.DataFrame) -> pd.MultiIndex:
    return pd.MultiIndex.from_arrays(
        [frame["query_id"].astype(str), frame["doc_id"].astype(str)], names=["query_id", "doc_id"]
    )


def _override(golden: GoldenSet, recorded: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """``golden.judgements`` with ``recorded``'s grades (``source`` "audit"), and how many
    differ from the judge's grade (S6's order, i.e. S4's)."""
    human = recorded.set_index(_keys(recorded))["relevance"]
    j = golden.judgements.copy()
    key = _keys(j)
    hit = key.isin(human.index)
    j.loc[hit, "grade"] = human.reindex(key[hit]).to_numpy(dtype=np.int64)
    j.loc[hit, "source"] = "audit"
    judge = golden.order.astype({"query_id": str, "doc_id": str})
    judge_grade = judge.set_index(["query_id", "doc_id"])["grade"].reindex(human.index)
    return j, int((judge_grade.to_numpy() != human.to_numpy()).sum())


def audit_markdown(
    golden: GoldenSet, path: str | os.PathLike[str] | None, rows: pd.DataFrame | None = None
) -> str:
    """Markdown for notebook 02: where the audit file is (a path a report may show), how
    much of it is audited, how to fill it and fold it back; ``path`` None: no run folder.
    ``rows``: the file's rows (:func:`audit_rows`) when it is yet to be written; default: read
    from ``path``."""
    from ragnb.core.paths import display_path

    if path is None:
        return (
            "**Audit of the refined top:** no run folder (`export_dir` is empty), so no file "
            "was written: `result.export(folder)` writes one, `audit_top.csv`."
        )
    rows = read_audit(path) if rows is None else rows
    done = int(rows["human_grade"].notna().sum())
    scale = golden.judge.scale
    shown = display_path(path)
    on = f" on the judge's scale {scale[0]}-{scale[1]}" if scale is not None else ""
    return (
        f"**Audit of the refined top:** {len(rows)} pairs (the top {golden.build.top_n} of "
        f"each of {rows['query_id'].nunique()} queries) in `{shown}`, {done} audited so far. "
        f"Fill its `human_grade` column{on} (empty: not audited), or grade the same rows in "
        "JupyterLab with `ragnb.studies.golden.labelling_view.audit_view(result.golden)` "
        "(the judge's grade shown only after you answer); then "
        "`golden.fold_audit(result.golden, result.golden.run_dir / "
        f'"{Path(path).name}")` records them '
        "as human labels (`audit.qrels`) and returns the golden set with them in its qrels in "
        "place of the judge's. The audit is the refined top, not a random sample: it corrects "
        "the qrels, it is no labelled sample for the prediction-powered intervals "
        "(`ragnb.studies.golden.audit`)."
    )
