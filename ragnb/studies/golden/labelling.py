"""Human labels for calibrating a judge: a stratified sample and a crash-safe store (the
labelling view of JupyterLab over them is :mod:`ragnb.studies.golden.labelling_view`).

- :func:`calibration_sample` draws the pairs to label from the judge's grades of the pool,
  stratified by the judge's grade and by the systems that retrieved each pair, and records each
  pair's inclusion probability so that estimates can be weighted
  (:func:`ragnb.ppi.ppi_system_estimates`'s ``inclusion``).
- :class:`LabelStore` keeps the labels as a TREC qrels file that only grows by whole lines: a
  killed kernel loses at most the label being typed, and reopening resumes where the person
  stopped.
- :func:`pair_items` joins the pairs to label with their query and passage texts (what
  :func:`ragnb.studies.golden.labelling_view.label_pairs` shows, one at a time).

Files
-----
Beside the labels file ``<labels>`` (``labels.qrels`` say):

============================== ================================================================
``<labels>``                   TREC qrels ``qid 0 docid grade``, one line per labelled pair,
                               readable by :func:`ragnb.io.readers.read_qrels` at any moment
``<labels>.skipped.jsonl``     pairs skipped (``{"query_id": ..., "doc_id": ...}`` a line)
``<labels>.sample.jsonl``      the sample: ``query_id, doc_id, stratum, inclusion_probability,
                               grade, systems`` (written once; reused when reopening)
``<labels>.torn``              a torn last line found on opening, set aside (:class:`AppendLog`)
============================== ================================================================

Writes
------
A new label is appended as one whole line with :class:`ragnb.io.files.AppendLog` (one ``write(2)``
on a file opened ``O_APPEND``), so the file holds every label given before a crash and nothing
half-written; a torn last line (a write cut short by a power loss) is moved aside on opening and
never parsed as a label. Undo, and a new grade for a pair already labelled (the latest label of a
pair wins), rewrite the file through :func:`ragnb.io.files.atomic_write` (a temporary file renamed
over it): a crash leaves the old file or the new one, never a mix. The labels file therefore never
holds two lines for one pair and stays a plain qrels file; a retraction record would have kept
appends only but made the file unreadable by TREC tools.

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

import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.validation import check_positive_int, require_columns
from ragnb.errors import InputError
from ragnb.io.files import AppendLog, atomic_write, read_qrels, read_records, write_records

__all__ = ["LabelStore", "calibration_sample", "pair_items"]

log = logging.getLogger("ragnb.studies.golden.labelling")

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
        :attr:`ragnb.studies.golden.GoldenSet.judgements` holds) unless ``provenance`` is given.
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
        (int64), as :func:`ragnb.io.readers.read_qrels` returns them."""
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
