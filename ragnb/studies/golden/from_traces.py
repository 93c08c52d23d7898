"""A golden set from production traces: the queries users asked, and the production retriever's
run pooled with the kit's retrievers.

:func:`trace_source` reads a trace file (:func:`ragnb.io.traces.read_traces`) for notebook 02's
``traces`` parameter. Queries the dataset already holds (same text once normalised,
:func:`ragnb.io.traces.query_key`) keep the dataset's id, so its labels stay usable by offline
judges and calibration; the others keep their trace id
(:meth:`ragnb.io.traces.Traces.with_dataset_ids`: the ids ``ragnb traces import --dataset`` writes
too). The most asked queries come first, so ``max_queries`` keeps the head of the traffic. Each
retriever of the trace joins the pool as the system ``traces-<name>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ragnb.errors import InputError
from ragnb.io.traces import read_traces

__all__ = [
    "TRACE_SYSTEM_PREFIX",
    "TraceSource",
    "trace_queries_table",
    "trace_source",
    "traces_markdown",
]

#: Pool systems built from a trace's runs are named this prefix + the retriever's name.
TRACE_SYSTEM_PREFIX = "traces-"


@dataclass(frozen=True)
class TraceSource:
    """What a trace file gives a golden set.

    Attributes
    ----------
    queries : DataFrame
        ``query_id``, ``text``, ``count`` (requests that asked it), most asked first.
    runs : dict of str to DataFrame
        Pool system (``traces-<retriever>``) -> run over ``queries`` (``query_id``, ``doc_id``,
        ``score``), documents without text anywhere left out.
    corpus : DataFrame
        ``doc_id``, ``title``, ``text``: documents the traces carry that the dataset's corpus
        lacks.
    info : dict
        For the manifest and the report: the trace summary (:meth:`ragnb.io.traces.Traces.summary`),
        the file, ``selected`` queries, ``in_dataset`` (of them, how many the dataset holds),
        ``asked`` ({query_id: count} of the selected queries) and ``dropped_documents``.
    """

    queries: pd.DataFrame
    runs: dict[str, pd.DataFrame]
    corpus: pd.DataFrame
    info: dict[str, Any]

    @property
    def source(self) -> str:
        """Where the queries come from, in words (the report's "Sample" line)."""
        i = self.info
        counts = list(i["asked"].values())
        each = ", ".join(str(n) for n in counts[:10]) + (", ..." if len(counts) > 10 else "")
        return (
            f"{i['selected']} queries from traces: the most asked of the {i['queries']} "
            f"distinct queries of the trace file {i['file']} ({i['requests']} requests), asked "
            f"{each} times; {i['in_dataset']} of them are also dataset queries"
        )


def trace_source(path: Path, dataset: Any, max_queries: int = 0, display: str = "") -> TraceSource:
    """Queries, pool runs and extra corpus rows from a trace file.

    Parameters
    ----------
    path : Path
        A trace file (:func:`ragnb.io.traces.read_traces`).
    dataset : BeirDataset
        The dataset whose corpus the documents are looked up in and whose queries lend their
        ids.
    max_queries : int >= 0, default 0
        Keep the most asked ``max_queries`` queries (0: all).
    display : str, default ""
        How reports name the file (default its name).

    Returns
    -------
    TraceSource

    Raises
    ------
    InputError
        A malformed trace file (file and line), or no retriever span left a ranking.
    FileNotFoundError
        When the file does not exist.
    """
    traces = read_traces(path).with_dataset_ids(dataset.queries)
    q = traces.queries.sort_values("count", ascending=False, kind="stable").reset_index(drop=True)
    if max_queries:
        q = q.head(max_queries)
    keep = set(q["query_id"])
    corpus_ids = set(dataset.corpus["doc_id"].astype(str))
    extra = traces.corpus[~traces.corpus["doc_id"].isin(corpus_ids)].reset_index(drop=True)
    with_text = corpus_ids | set(extra["doc_id"])
    runs, dropped = {}, 0
    for name, run in traces.runs.items():
        run = run[run["query_id"].isin(keep)]
        judgeable = run["doc_id"].isin(with_text)
        dropped += int((~judgeable).sum())
        runs[TRACE_SYSTEM_PREFIX + name] = run[judgeable].reset_index(drop=True)
    if not any(len(r) for r in runs.values()):
        raise InputError(
            "no document of the trace's rankings has a text (neither in the dataset's corpus nor "
            "as document.content in the spans): nothing to judge",
            path=path,
        )
    summary = traces.summary()
    info = {
        **summary,
        "file": display or path.name,
        "selected": len(q),
        "in_dataset": int(q["query_id"].isin(set(dataset.queries["query_id"])).sum()),
        "asked": {str(k): int(v) for k, v in zip(q["query_id"], q["count"], strict=True)},
        "dropped_documents": dropped,
        "systems": sorted(runs),
    }
    return TraceSource(queries=q, runs=runs, corpus=extra, info=info)


def trace_queries_table(info: dict[str, Any], queries: pd.DataFrame) -> pd.DataFrame:
    """How often each query of the golden set was asked in the traces.

    Parameters
    ----------
    info : dict
        :attr:`TraceSource.info` (as the manifest keeps it).
    queries : DataFrame
        The golden set's queries (``query_id``, ``text``).

    Returns
    -------
    DataFrame
        ``query_id``, ``text``, ``asked`` (int, requests), most asked first.
    """
    asked = info.get("asked", {})
    out = queries[["query_id", "text"]].copy()
    out["asked"] = out["query_id"].map(lambda q: int(asked.get(str(q), 0))).astype("int64")
    return out.sort_values("asked", ascending=False, kind="stable").reset_index(drop=True)


def traces_markdown(info: dict[str, Any]) -> str:
    """Markdown for notebook 02's traces section: spans read, bad spans by cause, queries and
    how often they were asked, the production systems pooled."""
    bad = ", ".join(f"{c} {n}" for c, n in info["bad_by_cause"].items() if n) or "none"
    asked = sorted(info["asked"].values(), reverse=True)
    lines = [
        f"**{info['selected']} queries came from traces** ({info['file']}): "
        f"{info['retriever_spans']} retriever spans of {info['spans']} spans, "
        f"{info['queries']} distinct queries asked {info['requests']} times; the golden set "
        f"keeps the {info['selected']} most asked, asked {sum(asked)} times "
        f"(from {asked[0]} down to {asked[-1]} each).",
        f"Bad retriever spans (counted, not used): {info['bad_spans']} ({bad}).",
        f"Production runs pooled: {', '.join(info['systems'])}.",
    ]
    if info["dropped_documents"]:
        lines.append(
            f"{info['dropped_documents']} retrieved documents have no text in the corpus or the "
            "spans and are left out of the pool."
        )
    return "\n\n".join(lines)
