"""trec_eval's command line on ragnb's measures: its flags, measure names and output, byte for byte.

``ragnb trec-eval [-q] [-c] [-n] [-J] [-l L] [-M M] [-N N] [-m MEASURE]... QRELS RUN`` reads the
same files and prints the same lines as trec_eval 10.0's ``trec_eval``: the same measure names
(``P_10``, ``iprec_at_recall_0.10``, ``ndcg_cut_10``, ...), parameters (``-m P.5,7,3``, ``-m
ndcg.1=3,2=9``, ``-m utility.2,-1,0,0``), measure sets (``official``, the default; ``all_trec``;
``set``), in trec_eval's order and format (``%-22s\\t%s\\t%6.4f``). Every value is a ragnb measure
(:func:`trec_eval_measure` gives its name) computed by :func:`ragnb.measures.prepare` and
:meth:`ragnb.measures.Measure.compute`, the evaluation of
:func:`ragnb.evaluation.evaluate.evaluate`; this module only maps names and flags and formats the
lines.

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
* Measures of the preference and ``qrels_jg`` formats (``-R prefs``, ``-R qrels_prefs``, ``-R
  qrels_jg``) and z-scores (``-Z``) are not read; asking for them is an error.

References
----------
.. [1] trec_eval 10.0, ``trec_eval.c``, ``measures.c``, ``meas_init.c``, ``meas_avg.c``,
   ``meas_print_single.c``, ``meas_print_final.c``, https://github.com/usnistgov/trec_eval
"""

from __future__ import annotations

import getopt
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.frames.index import sort_run
from ragnb.io.dispatch import read_qrels_file, read_run_file
from ragnb.io.readers import c_atol, read_qrels_jg, read_zscores
from ragnb.measures import Measure, RankingArrays, families, prepare
from ragnb.measures.gains import GAIN_FAMILIES, gain_values
from ragnb.measures.kernel import query_rows
from ragnb.measures.reslists import rel_lists
from ragnb.measures.trec import iprec_values, mean_of_levels

__all__ = [
    "MEASURE_SETS",
    "TREC_MEASURES",
    "TrecEvalOptions",
    "expand_measure_names",
    "format_lines",
    "parse_options",
    "run_trec_eval",
    "trec_eval_measure",
    "trec_eval_measures",
]

USAGE = (
    "Usage: ragnb trec-eval [-h] [-q] [-c] [-n] [-J] [-l<num>] [-M<num>] [-N<num>] "
    "[-m<measure>[.<params>]]... [-R qrels|qrels_jg] [-T trec_results] [-Z zscores_file] "
    "rel_info_file results_file\n"
)

#: trec_eval's measures in its order of calculation and printing (``measures.c``).
TREC_MEASURES = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
    "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref",
    "Rprec_mult", "utility", "11pt_avg", "binG", "G", "dcg", "ndcg", "ndcg_rel", "Rndcg",
    "ndcg_cut", "map_cut", "relative_P", "success", "set_P", "set_relative_P", "set_recall",
    "set_map", "set_F", "num_nonrel_judged_ret", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg",
    "rbp", "rbp_resid", "unj",
)  # fmt: skip

#: trec_eval's measure sets (``te_trec_measure_nicknames``), the ones on qrels and runs.
MEASURE_SETS = {
    "official": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
        "bpref", "recip_rank", "iprec_at_recall", "P",
    ),
    "set": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
        "set_relative_P", "set_map", "set_F",
    ),
    "all_trec": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
        "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "unj", "rbp", "rbp_resid",
        "infAP", "gm_bpref", "utility", "11pt_avg", "ndcg", "relative_P", "Rprec_mult",
        "success", "map_cut", "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G", "set_P",
        "set_recall", "set_relative_P", "set_map", "set_F", "num_nonrel_judged_ret",
    ),
    "qrels_jg": ("runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg"),
}  # fmt: skip
#: Sets and formats of trec_eval that this command does not read.
_UNSUPPORTED = ("all_prefs", "prefs")
#: The measures of qrels with judgment groups (``-R qrels_jg``) and the measure each averages
#: over a query's groups (``m_map_avgjg.c``, ``m_P_avgjg.c``, ``m_Rprec_mult_avgjg.c``).
_AVERAGED_OVER_GROUPS = {"map_avgjg": "map", "P_avgjg": "P", "Rprec_mult_avgjg": "Rprec_mult"}

_LONG_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_RECALLS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
_MULTS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
#: trec_eval name -> ragnb family, for the measures with a list of integer cutoffs.
_CUT_FAMILIES = {
    "P": ("P", _LONG_CUTOFFS),
    "recall": ("R", _LONG_CUTOFFS),
    "ndcg_cut": ("nDCG", _LONG_CUTOFFS),
    "map_cut": ("PR-AUC", _LONG_CUTOFFS),
    "relative_P": ("RelativeP", _LONG_CUTOFFS),
    "success": ("Success", (1, 5, 10)),
    "unj": ("Unjudged", (5, 10, 20)),
}
#: trec_eval name -> ragnb family, for the measures without parameters.
_PLAIN = {
    "num_ret": "NumRet",
    "num_rel": "NumRel",
    "num_rel_ret": "NumRelRet",
    "map": "PR-AUC",
    "gm_map": "GMAP",
    "Rprec": "Rprec",
    "bpref": "Bpref",
    "recip_rank": "RR",
    "infAP": "infAP",
    "gm_bpref": "GM-bpref",
    "binG": "binG",
    "set_P": "SetP",
    "set_relative_P": "SetRelP",
    "set_recall": "SetR",
    "set_map": "SetAP",
    "num_nonrel_judged_ret": "NumNonrelJudgedRet",
}
#: Measures whose parameters are numbers (not ``name=value`` pairs), besides the cutoff lists.
_NUMERIC = ("iprec_at_recall", "Rprec_mult", "utility", "set_F", "11pt_avg", "relstring")
#: Measures printed as integers (``%ld``) and summed in the ``all`` line.
_LONG = ("num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret")
#: Measures printed only in the ``all`` line, as a geometric mean.
_GEOMETRIC = ("gm_map", "gm_bpref")
#: trec_eval's names that print no number per query: what each prints instead.
_NOT_NUMBERS = {
    "runid": "the run's name (the all line only)",
    "num_q": "the count of queries (the all line only)",
    "relstring": "a string of grades",
}


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


def _mark(arg: str, marked: set[str], params: dict[str, str]) -> None:
    name, dot, param = arg.partition(".")
    if dot:
        if not param:
            raise InputError(f"trec-eval: improper measure in parameter {name!r}")
        params.setdefault(name, param)
    if name in _UNSUPPORTED:
        raise InputError(
            f"trec-eval: measure set {name!r} needs trec_eval's preference or qrels_jg formats, "
            "which ragnb does not read"
        )
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
        An unknown option or measure, a measure of the preference formats, ``-R``/``-T`` other
        than ``qrels``/``trec_results``, or not exactly two files.

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
        elif flag in ("-R", "--Rel_info_format") and value != "qrels":
            raise InputError(
                f"trec-eval: rel_info format {value!r} is not read (only qrels and qrels_jg)"
            )
        elif flag in ("-T", "--Results_format") and value != "trec_results":
            raise InputError(f"trec-eval: results format {value!r} is not read (only trec_results)")
        elif flag in ("-Z", "--Zscore"):
            kw["zscores"] = value
        elif flag in ("-h", "--help", "-v", "--version", "-D", "-o"):
            raise InputError(f"trec-eval: option {flag} is not supported\n{USAGE}")
    if len(files) != 2:
        raise InputError(f"trec-eval: expected a qrels file and a run file\n{USAGE}")
    order = tuple(m for m in TREC_MEASURES if m in (marked or MEASURE_SETS["official"]))
    by_group = [m for m in order if m in _AVERAGED_OVER_GROUPS]
    other = [m for m in order if m not in _AVERAGED_OVER_GROUPS and m not in ("runid", "num_q")]
    if kw.get("judgment_groups") and other:
        raise InputError(
            f"trec-eval: {other[0]} reads qrels, not qrels_jg (-R qrels_jg takes -m qrels_jg, "
            f"{', '.join(_AVERAGED_OVER_GROUPS)}); trec_eval stops too"
        )
    if by_group and not kw.get("judgment_groups"):
        raise InputError(f"trec-eval: {by_group[0]} reads qrels with judgment groups: -R qrels_jg")
    return TrecEvalOptions(files[0], files[1], measures=order, params=params, **kw)  # type: ignore[arg-type]


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


def _cutoffs(text: str, cast: Callable[[str], float]) -> list[float]:
    values = sorted(cast(t) for t in text.split(","))
    if values[0] < 0 or (cast is c_atol and values[0] <= 0):
        raise InputError(f"trec-eval: negative cutoff in {text!r}")
    if len(set(values)) != len(values):
        raise InputError(f"trec-eval: duplicate cutoff in {text!r}")
    return values


def _atof(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InputError(f"trec-eval: parameter {text!r} is not a number") from None


def _pairs(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in text.split(","):
        key, eq, value = item.partition("=")
        if not eq:
            raise InputError(f"trec-eval: expected name=value pairs, got {text!r}")
        out[key.strip()] = _atof(value)
    return out


def trec_eval_measure(
    name: str, param: float | None = None, *, level: int = 1, n_docs: int = 0
) -> Measure:
    """The ragnb measure computing a trec_eval measure at one cutoff or parameter.

    Parameters
    ----------
    name : str
        A trec_eval measure, e.g. ``"P"``, ``"iprec_at_recall"``, ``"map"``.
    param : float, optional
        Its cutoff (``P``, ``ndcg_cut``, ...), recall level or multiple of R.
    level : int, default 1
        trec_eval's ``-l``: given to every measure with a ``rel`` parameter.
    n_docs : int, default 0
        trec_eval's ``-N`` (``utility``).

    Returns
    -------
    Measure

    Raises
    ------
    InputError
        A name without a ragnb measure (``runid``, ``num_q``, ``relstring``).

    Examples
    --------
    >>> str(trec_eval_measure("iprec_at_recall", 0.1)), str(trec_eval_measure("P", 10, level=2))
    ('IPrec(recall=0.1,trec_eval=10)', 'P(rel=2)@10')
    """
    extra: dict[str, float] = {}
    cutoff = None
    if name in _CUT_FAMILIES:
        family, cutoff = _CUT_FAMILIES[name][0], int(param or 0)
    elif name == "iprec_at_recall":
        family, extra = "IPrec", {"recall": float(param or 0.0), "trec_eval": 10}
    elif name == "Rprec_mult":
        family, extra = "RprecMult", {"mult": float(param or 0.0)}
    elif name == "11pt_avg":
        family, extra = "IPrec-11pt", {"trec_eval": 10}
    elif name == "utility":
        family, extra = "Utility", {"n": n_docs}
    elif name == "set_F":
        family, extra = "SetF", {} if param is None else {"beta": param}
    elif name in _PLAIN:
        family = _PLAIN[name]
    elif name in GAIN_FAMILIES:  # gains or persistence come as name=value pairs
        family = GAIN_FAMILIES[name]
    elif name == "rbp_resid":
        family = "RBP-graded-residual"
    elif name == "dcg":
        family = "DCG"
    else:
        raise InputError(f"trec-eval: {name!r} has no ragnb measure")
    if families()[family].param("rel") is not None:
        extra["rel"] = level
    return Measure(family, cutoff, **extra)


def trec_eval_measures(
    name: str, param: str | None = None, *, level: int = 1, n_docs: int = 0
) -> list[tuple[str, Measure | None]]:
    """The values a trec_eval measure prints, with the ragnb measure of each.

    Parameters
    ----------
    name : str
        A trec_eval measure (``"P"``, ``"ndcg"``, ...).
    param : str, optional
        Its parameter text as after the dot of ``-m``: ``"5,7,3"``, ``".25,.5"``,
        ``"2,-1,0,0"``, ``"1=3,2=9"``, ``"p=0.8"``.
    level, n_docs : int
        trec_eval's ``-l`` and ``-N``.

    Returns
    -------
    list of (str, Measure or None)
        trec_eval's printed name of each value (``P_5``, ``iprec_at_recall_0.25``,
        ``utility_2,-1,0,0``) and its ragnb measure; None for what no one ragnb measure names
        (``relstring``, ``11pt_avg`` at other recall levels, gain-based measures with other
        gains).

    Raises
    ------
    InputError
        A cutoff list that is not positive and distinct, or a malformed parameter.

    Examples
    --------
    >>> [(n, str(m)) for n, m in trec_eval_measures("P", "10,5")]
    [('P_5', 'P@5'), ('P_10', 'P@10')]
    >>> trec_eval_measures("ndcg", "1=3,2=9")[0][1] is None
    True
    """

    def one(value: float | None = None) -> Measure:
        return trec_eval_measure(name, value, level=level, n_docs=n_docs)

    if name in _CUT_FAMILIES:
        cuts = _cutoffs(param, c_atol) if param else _CUT_FAMILIES[name][1]
        return [(f"{name}_{int(k)}", one(k)) for k in cuts]
    if name in ("iprec_at_recall", "Rprec_mult"):
        levels: Sequence[float] = _RECALLS if name[0] == "i" else _MULTS
        if param:
            levels = _cutoffs(param, _atof)
        return [(f"{name}_{k:3.2f}", one(k)) for k in levels]
    shown = name if param is None else f"{name}_{param}"
    if name == "relstring":
        return [(shown, None)]
    if param is None or name == "11pt_avg":
        return [(shown, one() if param is None else None)]
    if name == "utility":
        coef = [_atof(t) for t in param.split(",")]
        if len(coef) != 4:
            raise InputError(f"trec-eval: utility takes 4 coefficients, got {param!r}")
        a, b, c, d = coef
        return [(shown, Measure("Utility", a=a, b=b, c=c, d=d, n=n_docs, rel=level))]
    if name == "set_F":
        return [(shown, one(_atof(param.split(",")[0])))]
    pairs = _pairs(param)
    if name in ("rbp", "rbp_resid") and set(pairs) <= {"p"}:
        family = "RBP-graded" if name == "rbp" else "RBP-graded-residual"
        return [(shown, Measure(family, p=pairs.get("p", 0.9)))]
    return [(shown, None)]


def _columns(name: str, arrays: RankingArrays, opts: TrecEvalOptions) -> list[_Column]:
    """The printed columns of one trec_eval measure."""
    param = opts.params.get(name)
    kind = "long" if name in _LONG else "gm" if name in _GEOMETRIC else "float"
    out = []
    named = trec_eval_measures(name, param, level=opts.level, n_docs=opts.n_docs)
    if name == "iprec_at_recall":  # every level in one pass
        recalls = [m.params["recall"] for _, m in named if m is not None]
        values = iprec_values(arrays, recalls, rel=opts.level, trec_eval=10)
        return [_Column(shown, values[:, j], kind) for j, (shown, _) in enumerate(named)]
    for shown, m in named:
        if m is not None:
            out.append(_Column(shown, m.compute(arrays), kind))
        elif name == "relstring":
            length = int(_atof(param)) if param else 10
            out.append(_Column(shown, _relstrings(arrays, length), "string"))
        elif name == "11pt_avg":
            levels = [_atof(t) for t in str(param).split(",")]
            values = iprec_values(arrays, levels, rel=opts.level, trec_eval=10)
            out.append(_Column(shown, mean_of_levels(values)))
        else:
            pairs = _pairs(str(param))
            gains = {int(k): v for k, v in pairs.items() if k.lstrip("-").isdigit()}
            p = pairs.get("p", 0.9)
            values = gain_values(arrays, name, gains, p=p, rel=opts.level)
            out.append(_Column(shown, values))
    return out


def expand_measure_names(names: Sequence[str]) -> list[str | Measure]:
    """Measure names with trec_eval's ``-m`` syntax expanded into ragnb measures.

    ``P.5,7,3`` gives ``P@3``, ``P@5``, ``P@7``; ``iprec_at_recall..10,.25`` the two
    ``IPrec(recall=r,trec_eval=10)``; ``utility.2,-1,0,0`` ``Utility(a=2)``; a bare cutoff
    measure (``P``, ``ndcg_cut``) or a measure set (``official``, ``all_trec``, ``set``) its
    trec_eval defaults. Other names are returned unchanged (``P.10`` and ranx's ``rbp.95`` are
    read by :func:`ragnb.measures.parse_measure`).

    Parameters
    ----------
    names : sequence of str

    Returns
    -------
    list of str or Measure

    Raises
    ------
    InputError
        A trec_eval parameter that no ragnb measure takes (``ndcg.1=3,2=9``, ``11pt_avg`` at
        other recall levels), or ``runid``, ``num_q`` or ``relstring``, which print no number
        per query (``ragnb trec-eval`` prints those).

    Examples
    --------
    >>> [str(m) for m in expand_measure_names(["P.5,7,3", "nDCG@10"])]
    ['P@3', 'P@5', 'P@7', 'nDCG@10']
    """
    out: list[str | Measure] = []
    parts: list[tuple[str, str | None]]
    for text in names:
        name, dot, param = text.partition(".")
        listed = "," in param or "=" in param or name in _CUT_FAMILIES or name in _NUMERIC
        if name in _AVERAGED_OVER_GROUPS or name == "qrels_jg":
            raise InputError(
                f"measure {text!r}: trec_eval's {name} averages over the judgment groups of "
                "qrels_jg files; ragnb trec-eval -R qrels_jg prints it"
            )
        if name in _NOT_NUMBERS:
            raise InputError(
                f"measure {text!r}: trec_eval's {name} is {_NOT_NUMBERS[name]}, not a value "
                "per query that ragnb evaluate averages; ragnb trec-eval prints it"
            )
        if name in MEASURE_SETS and not dot:
            parts = [(n, None) for n in MEASURE_SETS[name] if n not in ("runid", "num_q")]
        elif name in TREC_MEASURES and ((dot and listed) or (not dot and name in _CUT_FAMILIES)):
            parts = [(name, param or None)]
        else:
            out.append(text)
            continue
        for one, one_param in parts:
            for shown, m in trec_eval_measures(one, one_param):
                if m is None:
                    if one == "relstring":
                        continue
                    raise InputError(
                        f"measure {text!r}: {shown} is not one ragnb measure; ragnb trec-eval "
                        "prints it"
                    )
                out.append(m)
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


def _read(opts: TrecEvalOptions) -> tuple[pd.DataFrame, pd.DataFrame, str, list[str]]:
    # the run first: its parser's buffers come and go before the qrels and the compiled
    # kernels take their share of memory
    run, tag, notes = _read_run(opts.run)
    qrels, qrels_notes = _read_qrels(opts.qrels)
    if run.empty or tag is None:
        raise InputError("trec-eval: the run holds no line", path=opts.run)
    return qrels, run, tag, qrels_notes + notes


def run_trec_eval(argv: Sequence[str]) -> tuple[str, list[str]]:
    """Evaluate as ``trec_eval ARGV`` does and return its output.

    Parameters
    ----------
    argv : sequence of str
        trec_eval's arguments, e.g. ``["-m", "all_trec", "-q", "qrels", "run"]``.

    Returns
    -------
    text : str
        trec_eval 10.0's standard output for these arguments, byte for byte.
    notes : list of str
        What the readers counted (lines with text after the last column trec_eval reads).

    Raises
    ------
    InputError
        Bad options or files, naming the file and line; a query of the qrels missing from the
        run without ``-c``.
    """
    opts = parse_options(argv)
    if opts.judgment_groups:
        return _run_judgment_groups(opts)
    qrels, run, runid, notes = _read(opts)
    arrays, lost = _evaluated(qrels, run, opts)
    del run  # the arrays hold what the measures read
    names = [name for name in opts.measures if name not in ("runid", "num_q")]
    # block after block, every measure: a block's shared derived arrays go with it
    per_block = []
    for start in range(0, max(arrays.n_queries, 1), QUERY_BLOCK):
        block = query_rows(arrays, start, start + QUERY_BLOCK)
        per_block.append([(name, col) for name in names for col in _columns(name, block, opts)])
    columns: list[_Column] = []
    for j, (name, col) in enumerate(per_block[0]):
        values = np.concatenate([cols[j][1].values for cols in per_block])
        if lost.any() and (name in ("utility", "relstring")):
            values[lost] = "" if col.kind == "string" else 0.0
        total = None
        if name == "num_rel" and opts.complete:
            # m_num_rel.c's te_calc_avg_num_rel: with -c, the qrels lines of grade > 0,
            # whatever -l, -J and -M
            total = float((qrels["relevance"] > 0).sum())
        columns.append(_Column(col.name, values, col.kind, total))
    if opts.zscores is not None:
        zscores = read_zscores(opts.zscores)
        columns = [_as_zscores(col, arrays.query_ids, zscores) for col in columns]
    return format_lines(opts, arrays.query_ids, columns, runid), notes


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
    arrays, _ = _evaluated(plain, run, opts)  # the queries, and trec_eval's missing check
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
            base = _AVERAGED_OVER_GROUPS.get(name)
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


def _line(name: str, qid: str, value: float | str, kind: str, z: bool = False) -> str:
    if z and kind not in ("string", "raw"):  # a z-score: every number printed as a double
        return f"Z{name:<22}\t{qid}\t{value:6.4f}\n"
    if kind == "string":
        return f"{name:<22}\t{qid}\t'{value}'\n"
    if kind == "long":
        return f"{name:<22}\t{qid}\t{int(value)}\n"
    if isinstance(value, str):
        return f"{name:<22}\t{qid}\t{value}\n"
    return f"{name:<22}\t{qid}\t{value:6.4f}\n"


def _summary(col: _Column) -> float:
    """The ``all`` value of a column: trec_eval's sequential sum, mean or geometric mean."""
    if col.total is not None:
        return col.total
    values = np.asarray(col.values, dtype=np.float64)
    if not len(values):
        return 0.0
    if col.kind == "gm":  # libm's log, as trec_eval's, value by value
        logs = np.fromiter((math.log(max(v, 1e-5)) for v in values.tolist()), np.float64)
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
