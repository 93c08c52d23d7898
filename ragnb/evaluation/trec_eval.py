"""trec_eval's command line on ragnb's measures: its flags, measure names and output, byte for byte.

``ragnb trec-eval [-q] [-c] [-n] [-J] [-l L] [-M M] [-N N] [-m MEASURE]... QRELS RUN`` reads the
same files and prints the same lines as trec_eval 10.0's ``trec_eval``: the same measure names
(``P_10``, ``iprec_at_recall_0.10``, ``ndcg_cut_10``, ...), parameters (``-m P.5,7,3``, ``-m
ndcg.1=3,2=9``, ``-m utility.2,-1,0,0``), measure sets (``official``, the default; ``all_trec``;
``set``), in trec_eval's order and format (``%-22s\\t%s\\t%6.4f``). Every value is a ragnb measure
computed by :func:`ragnb.measures.prepare` and :meth:`ragnb.measures.Measure.compute`, the
evaluation of :func:`ragnb.evaluation.evaluate.evaluate`; the names, sets and order are the
measure registry's (:mod:`ragnb.measures.trec_names`). This module reads the flags, runs the
measures and formats the lines (:func:`expand_measure_names` is the registry's, for ``ragnb
evaluate``).

Conventions of trec_eval 10.0 kept here
---------------------------------------
* Without ``-c`` every query of the qrels must be in the run (trec_eval 10.0 stops otherwise);
  with ``-c`` a query missing from the run is an empty ranking (trec_eval's one-document
  placeholder, its ``num_ret``, ``utility``, ``unj``, ``rbp_resid`` and ``relstring`` cleared).
  Run queries without qrels are left out. With ``-c`` the ``all`` line of ``num_rel`` counts
  the qrels lines of grade > 0, whatever ``-l`` (``m_num_rel.c``).
* A run is ordered by score descending, ties by document id descending; ``-M`` keeps the top M
  of each query, then ``-J`` drops the documents without a judgement >= 0.
* ``runid`` is the tag of the run's last line; ``num_q`` the queries evaluated.
* Files are read as trec_eval 10.0 reads them (``get_trec_results.c``, ``get_qrels.c``;
  :func:`ragnb.io.dispatch.read_run_file` and :func:`ragnb.io.dispatch.read_qrels_file` with
  ``as_trec_eval``):
  a run line is six fields or more (the rank ignored, the score read by C's ``atof``), blank
  and ``#`` lines skipped; a qrels line is exactly four fields (the grade read by C's
  ``atol``), a ``#`` line in the first column skipped unless it follows another. What trec_eval
  rejects is an error naming the file and line; so is a NaN score (trec_eval's order is
  undefined then) and a comment as the last qrels line (trec_eval crashes there). Two
  differences are left: ragnb reads UTF-8 text (a byte that is not UTF-8 is an error naming the
  line; a leading byte-order mark is dropped), where trec_eval reads any bytes; and DuckDB's
  reader (the ``fast`` extra) and the standard input end a run line at a lone carriage return,
  where trec_eval reads on to the line feed.
* Preference judgements (``-R prefs``, ``-R qrels_prefs``; :mod:`ragnb.io.prefs`) are read as
  trec_eval 10.0 reads them and take the measures of the sets ``all_prefs`` and ``prefs``
  (:mod:`ragnb.measures.prefs`); their runs are ordered by score descending, ties by document
  id ascending (``form_prefs_counts.c``), ``-M`` keeps the top M, ``-J``, ``-l`` and ``-N``
  change nothing, and with ``-c`` a query missing from the run is trec_eval's one-document
  placeholder. A measure of qrels asked with a preference format, or a preference measure
  without one, is an error (trec_eval stops too).

References
----------
.. [1] trec_eval 10.0, ``trec_eval.c``, ``measures.c``, ``meas_init.c``, ``meas_avg.c``,
   ``meas_print_single.c``, ``meas_print_final.c``, https://github.com/usnistgov/trec_eval
"""

from __future__ import annotations

import contextlib
import getopt
import math
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ragnb.core.machine import usable_cores
from ragnb.errors import DuplicateEntry, InputError
from ragnb.evaluation.evaluate import no_shared_query
from ragnb.frames.index import index_qrels, sort_run
from ragnb.io.dispatch import (
    locate_duplicate,
    read_qrels_file,
    read_run_file,
    scans_qrels,
    scans_run,
)
from ragnb.io.readers import read_qrels_jg, read_zscores
from ragnb.measures import RankingArrays, prepare
from ragnb.measures.gains import gain_values
from ragnb.measures.kernel import prepare_ranked, query_rows
from ragnb.measures.reslists import rel_lists
from ragnb.measures.trec import iprec_values, mean_of_levels
from ragnb.measures.trec_names import (
    AVERAGED_OVER_GROUPS,
    MEASURE_SETS,
    PREFERENCE_MEASURES,
    TREC_MEASURES,
    expand_measure_names,
    parse_numbers,
    parse_pairs,
    print_kind,
    trec_eval_family,
    trec_eval_measures,
    trec_eval_name,
)

__all__ = [
    "TrecEvalOptions",
    "expand_measure_names",
    "format_lines",
    "parse_options",
    "run_trec_eval",
]

USAGE = (
    "Usage: ragnb trec-eval [-h] [-q] [-c] [-n] [-J] [-l<num>] [-M<num>] [-N<num>] "
    "[-m<measure>[.<params>]]... [-R qrels|qrels_jg|prefs|qrels_prefs] [-T trec_results] "
    "[-Z zscores_file] "
    "rel_info_file results_file\n"
)

#: ``ragnb trec-eval -h``: trec_eval 10.0's options as read here (trec_eval's own ``-h`` text
#: describes the same flags).
HELP = (
    USAGE
    + """
Calculate and print trec_eval 10.0's measures, evaluating the run in results_file against the
judgements in rel_info_file, line for line as trec_eval prints them. '-' reads the standard input.

  -h, --help                  print this help and exit
  -q, --query_eval_wanted     a line per query and measure before the summary
  -m, --measure M[.PARAMS]    add measure M (repeatable); sets: official (default), all_trec,
                              set; all_prefs and prefs (with -R prefs or qrels_prefs)
  -c, --complete_rel_info_wanted
                              average over every query of the qrels; a query missing from the
                              run scores as an empty ranking (without -c such a query stops)
  -l, --level_for_rel N       smallest grade counted relevant (default 1)
  -n, --nosummary             no summary ('all') lines
  -N, --Number_docs_in_coll N documents in the collection (read by utility)
  -M, --Max_retrieved_per_topic N
                              keep the top N documents of each query
  -J, --Judged_docs_only      drop the retrieved documents without a judgement
  -R, --Rel_info_format F     qrels (default), qrels_jg (judgment groups), prefs (preference
                              judgements 'qid jg jsg docno rel_level') or qrels_prefs (qrels
                              read as preferences)
  -T, --Results_format F      trec_results (the only one)
  -Z, --Zscore FILE           print z-scores against the 'qid measure mean stddev' lines of FILE

exit status: 0 printed; 2 bad options or files (the message names the file and line).
"""
)


@dataclass(frozen=True)
class TrecEvalOptions:
    """trec_eval's command line, parsed.

    Attributes
    ----------
    qrels, run : str
        The two files (``-`` is the standard input).
    query : bool
        ``-q``: a line per query and measure before the ``all`` lines.
    complete : bool
        ``-c``: average over every query of the qrels.
    summary : bool
        False with ``-n``: no ``all`` lines.
    judged_only : bool
        ``-J``: drop the retrieved documents without a judgement >= 0.
    level : int
        ``-l``: the smallest grade counted relevant (default 1).
    max_docs : int or None
        ``-M``: documents kept per query.
    n_docs : int
        ``-N``: documents in the collection (read by ``utility``).
    measures : tuple of str
        The trec_eval measures marked, in trec_eval's order.
    params : dict of str to str
        The parameter text of a measure (``"5,7,3"`` of ``-m P.5,7,3``), the first given.
    zscores : str or None
        ``-Z``: a file of ``qid measure mean stddev`` lines; each per-query value is printed as
        its z-score against them, names prefixed with ``Z`` (:func:`ragnb.io.readers.read_zscores`).
    judgment_groups : bool
        ``-R qrels_jg``: the qrels name a judgment group in their second field
        (:func:`ragnb.io.readers.read_qrels_jg`), read by the ``qrels_jg`` measures only.
    preferences : {None, "prefs", "qrels_prefs"}
        ``-R prefs`` or ``-R qrels_prefs``: preference judgements
        (:func:`ragnb.io.prefs.read_prefs`, :func:`ragnb.io.prefs.read_qrels_prefs`), read by the
        preference measures only (:data:`ragnb.measures.trec_names.PREFERENCE_MEASURES`).
    help : bool
        ``-h``: print :data:`HELP` and nothing else (the files are not read).
    """

    qrels: str
    run: str
    query: bool = False
    complete: bool = False
    summary: bool = True
    judged_only: bool = False
    level: int = 1
    max_docs: int | None = None
    n_docs: int = 0
    measures: tuple[str, ...] = MEASURE_SETS["official"]
    params: dict[str, str] = field(default_factory=dict)
    zscores: str | None = None
    judgment_groups: bool = False
    help: bool = False
    preferences: str | None = None


def _mark(arg: str, marked: set[str], params: dict[str, str]) -> None:
    name, dot, param = arg.partition(".")
    if dot:
        if not param:
            raise InputError(f"trec-eval: improper measure in parameter {name!r}")
        params.setdefault(name, param)
    names = MEASURE_SETS.get(name, (name,))
    for one in names:
        if one not in TREC_MEASURES:
            raise InputError(
                f"trec-eval: illegal measure {arg!r}; known: {', '.join(TREC_MEASURES)}"
            )
        marked.add(one)


def _int_option(flag: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InputError(f"trec-eval: option {flag} takes an integer, got {text!r}") from None


def parse_options(argv: Sequence[str]) -> TrecEvalOptions:
    """Parse trec_eval's command line (GNU getopt rules, as trec_eval's ``getopt_long``).

    Parameters
    ----------
    argv : sequence of str
        The arguments after the command, e.g. ``["-q", "-m", "P.5,10", "qrels", "run"]``.

    Returns
    -------
    TrecEvalOptions

    Raises
    ------
    InputError
        An unknown option or measure, a preference measure without ``-R prefs`` or ``-R
        qrels_prefs`` or a measure of qrels with them, ``-R`` other than ``qrels``,
        ``qrels_jg``, ``prefs``, ``qrels_prefs``, ``-T`` other than ``trec_results``, or not
        exactly two files.

    Examples
    --------
    >>> opts = parse_options(["-q", "-mP.5,10", "-l2", "qrels.txt", "run.txt"])
    >>> opts.query, opts.level, opts.measures, opts.params
    (True, 2, ('P',), {'P': '5,10'})
    """
    try:
        pairs, files = getopt.gnu_getopt(
            list(argv),
            "hvqm:cl:nD:JN:M:R:T:oZ:",
            ["help", "version", "query_eval_wanted", "measure=", "complete_rel_info_wanted",
             "level_for_rel=", "nosummary", "Judged_docs_only", "Number_docs_in_coll=",
             "Max_retrieved_per_topic=", "Rel_info_format=", "Results_format=", "Zscore="],
        )  # fmt: skip
    except getopt.GetoptError as err:
        raise InputError(f"trec-eval: {err.msg}\n{USAGE}") from None
    marked: set[str] = set()
    params: dict[str, str] = {}
    kw: dict[str, object] = {}
    for flag, value in pairs:
        if flag in ("-m", "--measure"):
            _mark(value, marked, params)
        elif flag in ("-q", "--query_eval_wanted"):
            kw["query"] = True
        elif flag in ("-c", "--complete_rel_info_wanted"):
            kw["complete"] = True
        elif flag in ("-n", "--nosummary"):
            kw["summary"] = False
        elif flag in ("-J", "--Judged_docs_only"):
            kw["judged_only"] = True
        elif flag in ("-l", "--level_for_rel"):
            kw["level"] = _int_option(flag, value)
        elif flag in ("-M", "--Max_retrieved_per_topic"):
            kw["max_docs"] = _int_option(flag, value)
        elif flag in ("-N", "--Number_docs_in_coll"):
            kw["n_docs"] = _int_option(flag, value)
        elif flag in ("-R", "--Rel_info_format") and value == "qrels_jg":
            kw["judgment_groups"] = True
        elif flag in ("-R", "--Rel_info_format") and value in ("prefs", "qrels_prefs"):
            kw["preferences"] = value
        elif flag in ("-R", "--Rel_info_format") and value != "qrels":
            raise InputError(
                f"trec-eval: rel_info format {value!r} is not read (qrels, qrels_jg, prefs, "
                "qrels_prefs)"
            )
        elif flag in ("-T", "--Results_format") and value != "trec_results":
            raise InputError(f"trec-eval: results format {value!r} is not read (only trec_results)")
        elif flag in ("-Z", "--Zscore"):
            kw["zscores"] = value
        elif flag in ("-h", "--help"):
            kw["help"] = True
        elif flag in ("-v", "--version", "-D", "-o"):
            raise InputError(f"trec-eval: option {flag} is not supported\n{USAGE}")
    if kw.get("help"):
        return TrecEvalOptions("", "", help=True)
    if len(files) != 2:
        raise InputError(f"trec-eval: expected a qrels file and a run file\n{USAGE}")
    order = tuple(m for m in TREC_MEASURES if m in (marked or MEASURE_SETS["official"]))
    by_group = [m for m in order if m in AVERAGED_OVER_GROUPS]
    other = [m for m in order if m not in AVERAGED_OVER_GROUPS and m not in ("runid", "num_q")]
    if kw.get("judgment_groups") and other:
        raise InputError(
            f"trec-eval: {other[0]} reads qrels, not qrels_jg (-R qrels_jg takes -m qrels_jg, "
            f"{', '.join(AVERAGED_OVER_GROUPS)}); trec_eval stops too"
        )
    if by_group and not kw.get("judgment_groups"):
        raise InputError(f"trec-eval: {by_group[0]} reads qrels with judgment groups: -R qrels_jg")
    _check_preference_measures(order, kw.get("preferences"))
    return TrecEvalOptions(files[0], files[1], measures=order, params=params, **kw)  # type: ignore[arg-type]


def _check_preference_measures(order: tuple[str, ...], preferences: object) -> None:
    """The preference measures with ``-R prefs`` or ``-R qrels_prefs``, and only them."""
    prefs = [m for m in order if m in PREFERENCE_MEASURES]
    other = [m for m in order if m not in PREFERENCE_MEASURES and m not in ("runid", "num_q")]
    if preferences and other:
        raise InputError(
            f"trec-eval: {other[0]} reads qrels, not preference judgements (-R {preferences} "
            "takes -m all_prefs, -m prefs or their measures); trec_eval stops too"
        )
    if prefs and not preferences:
        raise InputError(
            f"trec-eval: {prefs[0]} reads preference judgements: -R prefs (qid jg jsg docno "
            "rel_level) or -R qrels_prefs (qrels read as preferences)"
        )


# ----------------------------------------------------------------------------- values

#: Queries evaluated at a time (:func:`ragnb.measures.kernel.query_rows`): the measures'
#: temporaries stay a few megabytes whatever the number of queries.
QUERY_BLOCK = 4096


@dataclass(frozen=True)
class _Column:
    """One printed measure: its trec_eval name, per-query values, print and average rules."""

    name: str
    values: np.ndarray  # float64 (n_queries,), or object strings for relstring
    kind: str = "float"  # "float", "long", "gm" (all line only), "string" (query lines only)
    total: float | None = None  # the all line's value when it is not the values' summary


def _columns(name: str, arrays: RankingArrays, opts: TrecEvalOptions) -> list[_Column]:
    """The printed columns of one trec_eval measure: the values of its ragnb measures, and what
    no one ragnb measure names (``relstring``, ``11pt_avg`` at other recall levels, gains given
    per level)."""
    param = opts.params.get(name)
    kind = print_kind(name)
    family = trec_eval_family(name)
    out = []
    named = trec_eval_measures(name, param, level=opts.level, n_docs=opts.n_docs)
    measures = [m for _, m in named if m is not None]
    if family == "IPrec" and len(measures) == len(named):  # every level in one pass
        recalls = [m.params["recall"] for m in measures]
        values = iprec_values(arrays, recalls, rel=opts.level, trec_eval=10)
        return [_Column(shown, values[:, j], kind) for j, (shown, _) in enumerate(named)]
    for shown, m in named:
        if m is not None:
            out.append(_Column(shown, m.compute(arrays), kind))
        elif kind == "string":
            numbers = parse_numbers(param) if param else list(trec_eval_name(name).defaults)
            if len(numbers) != 1:
                raise InputError(f"trec-eval: parameter {param!r} is not a number")
            out.append(_Column(shown, _relstrings(arrays, int(numbers[0])), kind))
        elif family == "IPrec-11pt":
            values = iprec_values(arrays, parse_numbers(str(param)), rel=opts.level, trec_eval=10)
            out.append(_Column(shown, mean_of_levels(values)))
        else:
            pairs = parse_pairs(str(param))
            gains = {int(k): v for k, v in pairs.items() if k.lstrip("-").isdigit()}
            p = pairs.get("p", 0.9)
            values = gain_values(arrays, str(family), gains, p=p, rel=opts.level)
            out.append(_Column(shown, values))
    return out


def _relstrings(arrays: RankingArrays, length: int) -> np.ndarray:
    """trec_eval's relstring: a character per rank of the top ``length``, ``0``-``9`` the grade,
    ``>`` above 9, ``-`` no judgement, ``.`` a negative judgement."""
    rels = rel_lists(arrays)[:, : max(length, 0)]
    chars = np.where(rels > 9, ord(">"), np.where(rels >= 0, ord("0") + rels, ord("<")))
    chars = np.where(rels == -1, ord("-"), np.where(rels == -2, ord("."), chars)).astype(np.uint8)
    n = (rels != -3).sum(axis=1)  # padding only follows the run's last rank
    out = np.empty(arrays.n_queries, dtype=object)
    out[:] = [row[:k].tobytes().decode("ascii") for row, k in zip(chars, n, strict=True)]
    return out


# ----------------------------------------------------------------------------- files and runs


def _ranked(run: pd.DataFrame, qrels: pd.DataFrame, opts: TrecEvalOptions) -> pd.DataFrame:
    """The run in trec_eval's order, cut at ``-M`` and without unjudged documents under ``-J``."""
    ranked = sort_run(run, "score", warn=False).run
    if opts.max_docs is not None:
        ranked = ranked[ranked.groupby("query_id", sort=False).cumcount() < opts.max_docs]
    if opts.judged_only:
        judged = qrels[qrels["relevance"] >= 0][["query_id", "doc_id"]]
        keep = ranked.merge(judged, on=["query_id", "doc_id"], how="left", indicator=True)
        ranked = ranked[(keep["_merge"] == "both").to_numpy()]
    # scores that keep the order: the rank, negated (prepare re-sorts by score)
    position = ranked.groupby("query_id", sort=False).cumcount().to_numpy()
    return pd.DataFrame(
        {
            "query_id": ranked["query_id"].to_numpy(),
            "doc_id": ranked["doc_id"].to_numpy(),
            "score": -position.astype(np.float64),
        }
    )


def _evaluated(
    qrels: pd.DataFrame, run: pd.DataFrame, opts: TrecEvalOptions
) -> tuple[RankingArrays, np.ndarray]:
    """The arrays of the evaluated queries and a mask of those missing from the run."""
    if opts.max_docs is None and not opts.judged_only:
        arrays = prepare(qrels, run, order="score")  # trec_eval's order, ties by doc id
        lost = arrays.n_retrieved == 0
    else:
        in_run = set(run["query_id"].unique())
        arrays = prepare(qrels, _ranked(run, qrels, opts), order="score")
        lost = np.array([q not in in_run for q in arrays.query_ids], dtype=bool)
    if lost.all() and not opts.complete:
        error = no_shared_query(arrays.query_ids, run, path=opts.run)
        raise InputError(
            f"trec-eval: {error.message} (trec_eval 10.0 stops at the first query of the qrels "
            "missing from the run; with -c it scores every query 0)",
            path=opts.run,
        )
    if lost.any() and not opts.complete:
        first = str(arrays.query_ids[np.argmax(lost)])
        why = (
            " (a '#' line right after a comment line of the qrels is a judgement to trec_eval)"
            if first.startswith("#")
            else ""
        )
        raise InputError(
            f"trec-eval: query {first!r} of the qrels is not in the run{why} (trec_eval 10.0 "
            "stops too); -c evaluates the missing queries as empty rankings",
            path=opts.run,
            query_id=first,
        )
    return arrays, lost


@contextlib.contextmanager
def _lines_named(path: str) -> Iterator[None]:
    """A pair given twice in the run, found by the join, named by its file and line."""
    try:
        yield
    except DuplicateEntry as e:
        if e.what != "run":
            raise
        raise locate_duplicate(path, e) from None


def _read_run(path: str) -> tuple[pd.DataFrame, str | None, list[str]]:
    """The run as trec_eval 10.0 reads it (no rank), the tag of its last line and the readers'
    notes (:func:`ragnb.io.dispatch.read_run_file` chooses the reader)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = read_run_file(path, as_trec_eval=True, rank=False)
    assert run.frame is not None  # read in memory
    return run.frame, run.tag, [*run.notes, *(str(w.message) for w in caught)]


def _read_qrels(path: str) -> tuple[pd.DataFrame, list[str]]:
    """The qrels as trec_eval 10.0 reads them and the readers' notes, as :func:`_read_run`."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        qrels = read_qrels_file(path, as_trec_eval=True)
    return qrels.frame, [*qrels.notes, *(str(w.message) for w in caught)]


def _read(
    opts: TrecEvalOptions, read_qrels: tuple[pd.DataFrame, list[str]] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, str, list[str]]:
    # the run first: its parser's buffers come and go before the qrels and the compiled
    # kernels take their share of memory
    run, tag, notes = _read_run(opts.run)
    qrels, qrels_notes = read_qrels or _read_qrels(opts.qrels)
    if run.empty or tag is None:
        raise InputError("trec-eval: the run holds no line", path=opts.run)
    return qrels, run, tag, qrels_notes + notes


@dataclass(frozen=True)
class _Scanned:
    """A run joined with its qrels as it was read (:func:`_scanned`)."""

    arrays: RankingArrays
    runid: str
    notes: list[str]
    relevant_lines: int  # qrels lines of grade > 0


def _scanned(opts: TrecEvalOptions) -> _Scanned | tuple[pd.DataFrame, list[str]] | None:
    """The run joined with its qrels as its bytes are read (:func:`ragnb.io.runscan.scan_run`,
    plain qrels by :func:`ragnb.io.runscan.scan_qrels`): the common case of a large run file,
    without ``-M`` or ``-J``, every query of the qrels in the run or ``-c``. Otherwise the qrels
    frame and its notes when the general readers read it (the run is then read beside it), or
    None."""
    if opts.max_docs is not None or opts.judged_only or not scans_run(opts.run):
        return None
    from ragnb.io.runscan import scan_qrels, scan_run  # numba's

    scanned = scan_qrels(opts.qrels) if scans_qrels(opts.qrels) else None
    read: tuple[pd.DataFrame, list[str]] | None = None
    if scanned is None:
        read = _read_qrels(opts.qrels)
        index = index_qrels(read[0])
    else:
        index = scanned.index
    run = scan_run(opts.run, scanned or index)
    if run is None or (not opts.complete and bool((run.n_retrieved == 0).any())):
        return read  # the general readers read the run, and name what is wrong
    arrays = prepare_ranked(index, run.n_retrieved, run.rank, run.n_run_queries_without_qrels)
    notes = read[1] if read is not None else []
    return _Scanned(arrays, run.tag, notes, int((index.grades > 0).sum()))


def run_trec_eval(argv: Sequence[str]) -> tuple[str, list[str]]:
    """Evaluate as ``trec_eval ARGV`` does and return its output.

    Parameters
    ----------
    argv : sequence of str
        trec_eval's arguments, e.g. ``["-m", "all_trec", "-q", "qrels", "run"]``.

    Returns
    -------
    text : str
        trec_eval 10.0's standard output for these arguments, byte for byte; with ``-h``
        :data:`HELP`.
    notes : list of str
        What the readers counted (lines with text after the last column trec_eval reads).

    Raises
    ------
    InputError
        Bad options or files, naming the file and line; a query of the qrels missing from the
        run without ``-c``.
    """
    opts = parse_options(argv)
    if opts.help:
        return HELP, []
    if opts.judgment_groups:
        return _run_judgment_groups(opts)
    if opts.preferences:
        return _run_preferences(opts)
    scanned = _scanned(opts)
    if isinstance(scanned, _Scanned):
        arrays, runid, notes = scanned.arrays, scanned.runid, scanned.notes
        relevant_lines = scanned.relevant_lines
        lost = arrays.n_retrieved == 0
    else:
        qrels, run, runid, notes = _read(opts, scanned)
        with _lines_named(opts.run):
            arrays, lost = _evaluated(qrels, run, opts)
        del run  # the arrays hold what the measures read
        relevant_lines = int((qrels["relevance"] > 0).sum())
    # relstring is printed for each query only (-q): without it, not computed
    skip = ("runid", "num_q") if opts.query else ("runid", "num_q", "relstring")
    names = [name for name in opts.measures if name not in skip]
    per_block = _per_block(arrays, names, opts)
    columns: list[_Column] = []
    # trec_eval's num_ret: 0 after -J or -M 0, also for the one-document placeholder of -c
    no_docs = arrays.n_retrieved == 0
    if not (opts.judged_only or opts.max_docs == 0):
        no_docs &= ~lost
    for j, (name, col) in enumerate(per_block[0]):
        values = np.concatenate([cols[j][1].values for cols in per_block])
        if lost.any() and (name in ("utility", "relstring")):
            values[lost] = "" if col.kind == "string" else 0.0
        if no_docs.any() and name in ("iprec_at_recall", "11pt_avg"):
            values[no_docs & _zero_cut(name, col.name, arrays, opts)] = math.nan
        total = None
        if name == "num_rel" and opts.complete:
            # m_num_rel.c's te_calc_avg_num_rel: with -c, the qrels lines of grade > 0,
            # whatever -l, -J and -M
            total = float(relevant_lines)
        columns.append(_Column(col.name, values, col.kind, total))
    if opts.zscores is not None:
        zscores = read_zscores(opts.zscores)
        columns = [_as_zscores(col, arrays.query_ids, zscores) for col in columns]
    return format_lines(opts, arrays.query_ids, columns, runid), notes


def _per_block(
    arrays: RankingArrays, names: list[str], opts: TrecEvalOptions
) -> list[list[tuple[str, _Column]]]:
    """Every measure's columns, block of :data:`QUERY_BLOCK` queries after block (a block's
    shared derived arrays go with it), two blocks at a time on two threads when there are
    several (numpy lets the GIL go in its loops)."""

    def block_columns(start: int) -> list[tuple[str, _Column]]:
        block = query_rows(arrays, start, start + QUERY_BLOCK)
        return [(name, col) for name in names for col in _columns(name, block, opts)]

    starts = range(0, max(arrays.n_queries, 1), QUERY_BLOCK)
    if len(starts) < 2 or usable_cores() < 2:
        return [block_columns(start) for start in starts]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(block_columns, starts))


def _zero_cut(name: str, shown: str, arrays: RankingArrays, opts: TrecEvalOptions) -> np.ndarray:
    """The queries where a recall level of ``iprec_at_recall`` or ``11pt_avg`` asks for 0
    relevant documents (``lround(level * num_rel) == 0``: level 0, or a query with few relevant
    documents). With no document retrieved (num_ret 0, after ``-J`` or ``-M 0``), trec_eval 10.0
    reads precision 0/0 there (``m_iprec_at_recall.c``, ``m_11pt_avg.c``) and prints ``-nan``,
    in the query's line and in the summary."""
    if name == "iprec_at_recall":
        levels = [float(shown.rsplit("_", 1)[1])]
    else:
        param = opts.params.get(name)
        levels = parse_numbers(param) if param else [i / 10 for i in range(11)]
    n_rel = arrays.n_relevant(opts.level).astype(np.float64)
    return np.any([np.floor(r * n_rel + 0.5) == 0 for r in levels], axis=0)


#: The value trec_eval gives a query and measure the ``-Z`` file has no mean for
#: (``MISSING_ZSCORE_VALUE`` of ``trec_eval.h``).
MISSING_ZSCORE = -1000000.0


def _as_zscores(
    col: _Column, query_ids: np.ndarray, zscores: dict[tuple[str, str], tuple[float, float]]
) -> _Column:
    """A column's per-query values as z-scores (``convert_zscores.c``): ``(v - mean) / sd``; 0
    where ``sd`` is 0 and ``v`` the mean; :data:`MISSING_ZSCORE` for a pair without a line or a
    zero ``sd`` with another value. relstring stays as it is."""
    if col.kind == "string":
        return col
    values = np.asarray(col.values, dtype=np.float64).copy()
    for q, qid in enumerate(query_ids.tolist()):
        mean, sd = zscores.get((str(qid), col.name), (math.nan, math.nan))
        if sd != 0 and not math.isnan(sd):
            values[q] = (values[q] - mean) / sd
        elif sd == 0 and values[q] == mean:
            values[q] = 0.0
        else:
            values[q] = MISSING_ZSCORE
    return _Column(col.name, values, col.kind, col.total)


def _run_judgment_groups(opts: TrecEvalOptions) -> tuple[str, list[str]]:
    """:func:`run_trec_eval` on qrels with judgment groups: each ``*_avgjg`` measure is its
    measure on each judgment group of a query's qrels, summed in group order and divided by the
    query's number of groups when above one (``m_map_avgjg.c`` and its two siblings)."""
    run, runid, notes = _read_run(opts.run)
    if run.empty or runid is None:
        raise InputError("trec-eval: the run holds no line", path=opts.run)
    qrels = read_qrels_jg(opts.qrels)
    plain = qrels.drop_duplicates(["query_id", "doc_id"])[["query_id", "doc_id", "relevance"]]
    with _lines_named(opts.run):  # the queries, and trec_eval's missing check
        arrays, _ = _evaluated(plain, run, opts)
    rows = pd.Index(arrays.query_ids)
    complete = replace(opts, complete=True)
    sums: dict[str, np.ndarray] = {}  # by printed name, in trec_eval's order
    n_groups = np.zeros(arrays.n_queries, dtype=np.int64)
    for group in sorted(qrels["judgment_group"].unique()):  # strcmp order, as trec_eval's
        judged = qrels[qrels["judgment_group"] == group].drop(columns="judgment_group")
        group_arrays, _ = _evaluated(judged, run, complete)
        at = rows.get_indexer(group_arrays.query_ids)
        n_groups[at] += 1
        for name in opts.measures:
            base = AVERAGED_OVER_GROUPS.get(name)
            if base is None:
                continue
            params = {base: opts.params[name]} if name in opts.params else {}
            for col in _columns(base, group_arrays, replace(opts, params=params)):
                total = sums.setdefault(name + col.name[len(base) :], np.zeros(len(rows)))
                total[at] += col.values
    columns = [
        _Column(shown, np.where(n_groups > 1, total / np.maximum(n_groups, 1), total))
        for shown, total in sums.items()
    ]
    return format_lines(opts, arrays.query_ids, columns, runid), notes


#: The document of trec_eval's one-document ranking of a query missing from the run under
#: ``-c`` (``trec_eval.c``'s ``bogus_result``, score 1.0).
PLACEHOLDER_DOC = "ceci_nest_pas_un_docno"


def _run_preferences(opts: TrecEvalOptions) -> tuple[str, list[str]]:
    """:func:`run_trec_eval` on preference judgements (``-R prefs``, ``-R qrels_prefs``): every
    value a preference measure's on :func:`ragnb.measures.prefs.prepare_prefs`'s arrays, the
    queries those of the judgements (``trec_eval.c``, ``form_prefs_counts.c``)."""
    from ragnb.io.prefs import read_prefs, read_qrels_prefs
    from ragnb.measures.prefs import prepare_prefs

    run, runid, notes = _read_run(opts.run)
    if run.empty or runid is None:
        raise InputError("trec-eval: the run holds no line", path=opts.run)
    reader = read_prefs if opts.preferences == "prefs" else read_qrels_prefs
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prefs = reader(opts.qrels)
    notes = [*(str(w.message) for w in caught), *notes]
    run = _with_placeholders(run, prefs["query_id"], opts)
    with _lines_named(opts.run):
        arrays = prepare_prefs(
            prefs, run, depth=None if opts.max_docs is None else max(opts.max_docs, 0)
        )
    names = [name for name in opts.measures if name not in ("runid", "num_q")]
    columns = [col for name in names for col in _columns(name, arrays, opts)]
    if opts.zscores is not None:
        zscores = read_zscores(opts.zscores)
        columns = [_as_zscores(col, arrays.query_ids, zscores) for col in columns]
    return format_lines(opts, arrays.query_ids, columns, runid), notes


def _with_placeholders(run: pd.DataFrame, judged: pd.Series, opts: TrecEvalOptions) -> pd.DataFrame:
    """The run's ``query_id``, ``doc_id`` and ``score``, with trec_eval's one-document ranking
    for each judged query missing from it under ``-c``; without ``-c`` such a query stops, as
    trec_eval 10.0 stops."""
    run = run[["query_id", "doc_id", "score"]]
    in_run = set(run["query_id"].astype(str).unique().tolist())
    queries = sorted(set(judged.tolist()))
    missing = [q for q in queries if q not in in_run]
    if missing and not opts.complete:
        if len(missing) == len(queries):
            raise InputError(
                f"trec-eval: {no_shared_query(queries, run, path=opts.run).message} (trec_eval "
                "10.0 stops at the first query of the judgements missing from the run; with -c "
                "it scores every query as a one-document ranking)",
                path=opts.run,
            )
        raise InputError(
            f"trec-eval: query {missing[0]!r} of the preference judgements is not in the run "
            "(trec_eval 10.0 stops too); -c evaluates the missing queries as trec_eval's "
            "one-document ranking",
            path=opts.run,
            query_id=missing[0],
        )
    if not missing:
        return run
    placeholders = pd.DataFrame(
        {"query_id": missing, "doc_id": PLACEHOLDER_DOC, "score": 1.0}, columns=run.columns
    )
    return pd.concat([run, placeholders], ignore_index=True)


def _line(name: str, qid: str, value: float | str, kind: str, z: bool = False) -> str:
    if z and kind not in ("string", "raw"):  # a z-score: every number printed as a double
        return f"Z{name:<22}\t{qid}\t{value:6.4f}\n"
    if kind == "string":
        return f"{name:<22}\t{qid}\t'{value}'\n"
    if kind == "long":
        return f"{name:<22}\t{qid}\t{int(value)}\n"
    if isinstance(value, str):
        return f"{name:<22}\t{qid}\t{value}\n"
    if math.isnan(value):  # C's printf of 0.0 / 0.0 (sign bit set on x86-64)
        return f"{name:<22}\t{qid}\t{'-nan':>6}\n"
    return f"{name:<22}\t{qid}\t{value:6.4f}\n"


def _summary(col: _Column) -> float:
    """The ``all`` value of a column: trec_eval's sequential sum, mean or geometric mean."""
    if col.total is not None:
        return col.total
    values = np.asarray(col.values, dtype=np.float64)
    if not len(values):
        return 0.0
    if col.kind == "gm":  # libm's log, as trec_eval's, value by value
        floored = np.maximum(values, 1e-5).tolist()  # max(v, 1e-5), NaN kept
        logs = np.fromiter(map(math.log, floored), np.float64, len(floored))
        return math.exp(float(np.cumsum(logs)[-1]) / len(values))
    total = float(np.cumsum(values)[-1])  # cumsum adds in order, as trec_eval's loop
    return total if col.kind == "long" else total / len(values)


def format_lines(
    opts: TrecEvalOptions, query_ids: np.ndarray, columns: list[_Column], runid: str
) -> str:
    """trec_eval's output: per-query lines (``-q``) then the ``all`` lines.

    Parameters
    ----------
    opts : TrecEvalOptions
    query_ids : ndarray of str, shape (n_queries,)
        The evaluated queries, sorted.
    columns : list
        The measures' columns, in trec_eval's order.
    runid : str

    Returns
    -------
    str
        Lines ``%-22s\\t%s\\t%6.4f`` (``%ld`` for the counts, ``'%s'`` for relstring).
    """
    out: list[str] = []
    z = opts.zscores is not None
    if opts.query:
        for q, qid in enumerate(query_ids):
            for col in columns:
                if col.kind != "gm":
                    out.append(_line(col.name, str(qid), col.values[q], col.kind, z))
    if opts.summary:
        if "runid" in opts.measures:
            out.append(_line("runid", "all", runid, "raw"))
        if "num_q" in opts.measures:
            out.append(_line("num_q", "all", len(query_ids), "long", z))
        for col in columns:
            if col.kind != "string":
                out.append(_line(col.name, "all", _summary(col), col.kind, z))
    return "".join(out)
