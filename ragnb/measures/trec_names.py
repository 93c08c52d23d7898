"""trec_eval 10.0's measure names: which ragnb measure each is, its defaults, sets and order.

Each family carries its trec_eval names as data (:attr:`ragnb.measures.MeasureFamily.trec_eval`,
a :class:`ragnb.measures.TrecEvalName` each: ``P`` is ``P`` with the cutoffs 5, 10, ..., 1000;
``map`` is ``AP``; ``iprec_at_recall`` is ``IPrec(trec_eval=10)`` at recall 0, 0.1, ..., 1).
This module answers from them both ways, trec_eval name -> measures
(:func:`trec_eval_measures`, :func:`expand_measure_names`) and measure -> trec_eval name
(:func:`trec_eval_printed`), and holds what belongs to no family: trec_eval's order of printing,
its measure sets (``official``, ``all_trec``, ``set``, ``qrels_jg``; ``all_prefs`` and ``prefs``,
the measures of preference judgements), the names that print no number per query (``runid``,
``num_q``, ``relstring``) and the measures averaged over the judgment groups of ``qrels_jg``
files.

==================== ===================================================================
trec_eval            ragnb
==================== ===================================================================
``P.5,10``           ``P@5``, ``P@10`` (``P_5``, ``P_10``; bare ``P``: trec_eval's nine)
``map``, ``map_cut`` ``AP``, ``AP@K``
``utility.2,-1,0,0`` ``Utility(a=2)`` (``utility_2,-1,0,0``)
``ndcg.1=3,2=9``     no one ragnb measure (a gain per level); ``ragnb trec-eval`` prints it
``all_trec``         every measure of the set, in trec_eval's order
==================== ===================================================================

References
----------
.. [1] trec_eval 10.0, ``measures.c`` (names, order and sets), ``meas_init.c`` (parameters and
   default cutoffs), ``meas_print_single.c``, https://github.com/usnistgov/trec_eval
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from ragnb.errors import InputError
from ragnb.io.readers import c_atol
from ragnb.measures.base import Measure, TrecEvalName, families, parse_measure, trec_eval_names
from ragnb.measures.prefs import PREFS_MEASURES

__all__ = [
    "AVERAGED_OVER_GROUPS",
    "MEASURE_SETS",
    "PREFERENCE_MEASURES",
    "TREC_MEASURES",
    "expand_measure_names",
    "parse_numbers",
    "parse_pairs",
    "print_kind",
    "trec_eval_family",
    "trec_eval_measure",
    "trec_eval_measures",
    "trec_eval_name",
    "trec_eval_printed",
]

#: trec_eval's measures in its order of calculation and printing (``measures.c``).
TREC_MEASURES = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
    "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref",
    "Rprec_mult", "utility", "11pt_avg", "binG", "G", "dcg", "ndcg", "ndcg_rel", "Rndcg",
    "ndcg_cut", "map_cut", "relative_P", "success", "set_P", "set_relative_P", "set_recall",
    "set_map", "set_F", "num_nonrel_judged_ret", *PREFS_MEASURES, "map_avgjg", "P_avgjg",
    "Rprec_mult_avgjg", "rbp", "rbp_resid", "unj",
)  # fmt: skip

#: The measures of preference judgements (``-R prefs``, ``-R qrels_prefs``; the families of
#: :mod:`ragnb.measures.prefs`, named as trec_eval names them), in trec_eval's order.
PREFERENCE_MEASURES = PREFS_MEASURES

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
    "all_prefs": ("runid", "num_q", *PREFS_MEASURES),
    "prefs": ("runid", "num_q", *PREFS_MEASURES[:6]),
}  # fmt: skip

#: The measures of qrels with judgment groups (``-R qrels_jg``) and the measure each averages
#: over a query's groups (``m_map_avgjg.c``, ``m_P_avgjg.c``, ``m_Rprec_mult_avgjg.c``).
AVERAGED_OVER_GROUPS = {"map_avgjg": "map", "P_avgjg": "P", "Rprec_mult_avgjg": "Rprec_mult"}

#: trec_eval's names of no family: they print no number per query, and what each prints.
_NOT_NUMBERS = {
    "runid": (TrecEvalName("runid"), "the run's name (the all line only)"),
    "num_q": (TrecEvalName("num_q"), "the count of queries (the all line only)"),
    "relstring": (TrecEvalName("relstring", "numbers", defaults=(10,)), "a string of grades"),
}


def trec_eval_name(name: str) -> TrecEvalName:
    """The registry's entry for a trec_eval measure name.

    Parameters
    ----------
    name : str
        A trec_eval measure, e.g. ``"P"``, ``"map"``, ``"relstring"``.

    Returns
    -------
    TrecEvalName

    Raises
    ------
    InputError
        A name trec_eval 10.0 does not compute on qrels and runs.

    Examples
    --------
    >>> trec_eval_name("success").defaults
    (1, 5, 10)
    """
    entry = trec_eval_names().get(name)
    if entry is not None:
        return entry[1]
    if name in _NOT_NUMBERS:
        return _NOT_NUMBERS[name][0]
    raise InputError(f"trec-eval: {name!r} has no ragnb measure")


def trec_eval_family(name: str) -> str | None:
    """The ragnb family of a trec_eval measure name (``"map"``: ``"AP"``); None for a name of
    no family (``runid``, ``num_q``, ``relstring``, the ``*_avgjg`` measures, unknown names)."""
    entry = trec_eval_names().get(name)
    return None if entry is None else entry[0]


def print_kind(name: str) -> Literal["float", "long", "gm", "string"]:
    """How trec_eval prints a measure: ``"long"`` a count (``%ld``, summed in the ``all`` line),
    ``"gm"`` the ``all`` line only (a geometric mean), ``"string"`` the query lines only
    (``relstring``), ``"float"`` ``%6.4f``; from the family's ``aggregate``.

    Examples
    --------
    >>> print_kind("num_ret"), print_kind("gm_map"), print_kind("P")
    ('long', 'gm', 'float')
    """
    if name == "relstring":
        return "string"
    family = trec_eval_family(name)
    aggregate = "mean" if family is None else families()[family].aggregate
    return "long" if aggregate == "sum" else "gm" if aggregate == "gmean" else "float"


def _numbers(text: str, cast: Callable[[str], float]) -> list[float]:
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


def parse_pairs(text: str) -> dict[str, float]:
    """trec_eval's ``name=value`` parameter pairs (``"1=3,2=9"``, ``"p=0.8"``).

    Raises
    ------
    InputError
        An item without ``=`` or a value that is not a number.
    """
    out: dict[str, float] = {}
    for item in text.split(","):
        key, eq, value = item.partition("=")
        if not eq:
            raise InputError(f"trec-eval: expected name=value pairs, got {text!r}")
        out[key.strip()] = _atof(value)
    return out


def parse_numbers(text: str) -> list[float]:
    """trec_eval's list of numbers (``".25,.5"``), in the order given.

    Raises
    ------
    InputError
        An item that is not a number.
    """
    return [_atof(t) for t in text.split(",")]


def trec_eval_measure(
    name: str, param: float | None = None, *, level: int = 1, n_docs: int = 0
) -> Measure:
    """The ragnb measure computing a trec_eval measure at one cutoff or parameter.

    Parameters
    ----------
    name : str
        A trec_eval measure, e.g. ``"P"``, ``"iprec_at_recall"``, ``"map"``.
    param : float, optional
        Its cutoff (``P``, ``ndcg_cut``, ...), recall level or multiple of R; the first
        parameter of ``set_F`` (``beta``) and ``utility`` (``a``).
    level : int, default 1
        trec_eval's ``-l``: given to every measure with a ``rel`` parameter.
    n_docs : int, default 0
        trec_eval's ``-N`` (``utility``).

    Returns
    -------
    Measure
        The registered measure trec_eval computes under that name (``map`` is ``AP``).

    Raises
    ------
    InputError
        A name without a ragnb measure (``runid``, ``num_q``, ``relstring``).

    Examples
    --------
    >>> str(trec_eval_measure("iprec_at_recall", 0.1)), str(trec_eval_measure("P", 10, level=2))
    ('IPrec(recall=0.1,trec_eval=10)', 'P(rel=2)@10')
    >>> str(trec_eval_measure("map"))
    'AP'
    """
    family = trec_eval_family(name)
    if family is None:
        raise InputError(f"trec-eval: {name!r} has no ragnb measure")
    spec = trec_eval_name(name)
    params: dict[str, float] = dict(spec.params)
    cutoff = None
    if spec.syntax == "list" and spec.over == "k":
        cutoff = int(param or 0)
    elif spec.syntax == "list" and spec.over is not None:
        params[spec.over] = float(param or 0.0)
    elif spec.syntax == "values" and param is not None:
        params[spec.reads[0]] = param
    return _measure(family, cutoff, params, level, n_docs)


def _measure(
    family: str, cutoff: int | None, params: dict[str, float], level: int, n_docs: int
) -> Measure:
    """``family``'s measure with trec_eval's ``-l`` as ``rel`` and ``-N`` as ``n``."""
    spec = families()[family]
    if spec.param("n") is not None:
        params["n"] = n_docs
    if spec.param("rel") is not None:
        params["rel"] = level
    return Measure(family, cutoff, **params)


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
        An unknown name, a cutoff list that is not positive and distinct, or a malformed
        parameter.

    Examples
    --------
    >>> [(n, str(m)) for n, m in trec_eval_measures("P", "10,5")]
    [('P_5', 'P@5'), ('P_10', 'P@10')]
    >>> trec_eval_measures("ndcg", "1=3,2=9")[0][1] is None
    True
    """
    spec = trec_eval_name(name)
    family = trec_eval_family(name)

    def one(value: float | None = None) -> Measure:
        return trec_eval_measure(name, value, level=level, n_docs=n_docs)

    if spec.syntax == "list":
        values: Sequence[float] = spec.defaults
        if param:
            values = _numbers(param, c_atol if spec.over == "k" else _atof)
        return [(spec.printed(v), one(v)) for v in values]
    shown = spec.printed(text=param)
    if family is None or (param is not None and spec.syntax == "numbers"):
        return [(shown, None)]
    if param is None:
        return [(shown, one())]
    if spec.syntax == "values":
        numbers = parse_numbers(param)
        if len(spec.reads) > 1 and len(numbers) != len(spec.reads):
            raise InputError(
                f"trec-eval: {name} takes {len(spec.reads)} coefficients, got {param!r}"
            )
        values_of = dict(zip(spec.reads, numbers, strict=False))
        return [(shown, _measure(family, None, {**spec.params, **values_of}, level, n_docs))]
    pairs = parse_pairs(param)
    if set(pairs) <= set(spec.reads):
        return [(shown, _measure(family, None, {**spec.params, **pairs}, level, n_docs))]
    return [(shown, None)]


def trec_eval_printed(measure: Measure | str) -> str | None:
    """The name trec_eval prints a ragnb measure under, or None if trec_eval computes it not.

    The measure's ``rel`` is trec_eval's ``-l`` and its ``n`` trec_eval's ``-N``: they do not
    change the name.

    Parameters
    ----------
    measure : Measure or str
        A measure or a name :func:`ragnb.measures.parse_measure` reads.

    Returns
    -------
    str or None

    Examples
    --------
    >>> trec_eval_printed("AP"), trec_eval_printed("nDCG@10"), trec_eval_printed("P(rel=2)@5")
    ('map', 'ndcg_cut_10', 'P_5')
    >>> trec_eval_printed("IPrec(recall=0.1,trec_eval=10)"), trec_eval_printed("nDCG'@10")
    ('iprec_at_recall_0.10', None)
    >>> trec_eval_printed("Utility(a=2)")
    'utility_2,-1,0,0'
    """
    m = parse_measure(measure)
    defaults = {p.name: p.default for p in m.spec.params}
    for family, spec in trec_eval_names().values():
        cuts = spec.syntax == "list" and spec.over == "k"
        if family != m.family or (m.cutoff is not None) != cuts:
            continue
        free = {"rel", "n", *spec.reads, str(spec.over)}
        fixed = {k: spec.params.get(k, v) for k, v in defaults.items() if k not in free}
        if any(m.params[k] != v for k, v in fixed.items()):
            continue
        if spec.syntax == "list":
            return spec.printed(m.cutoff if cuts else m.params[str(spec.over)])
        changed = [k for k in spec.reads if m.params[k] != defaults[k]]
        if not changed:
            return spec.printed()
        if spec.syntax == "values":
            return spec.printed(text=",".join(f"{m.params[k]:g}" for k in spec.reads))
        return spec.printed(text=",".join(f"{k}={m.params[k]:g}" for k in changed))
    return None


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
        if name in AVERAGED_OVER_GROUPS or name == "qrels_jg":
            raise InputError(
                f"measure {text!r}: trec_eval's {name} averages over the judgment groups of "
                "qrels_jg files; ragnb trec-eval -R qrels_jg prints it"
            )
        if name in _NOT_NUMBERS:
            raise InputError(
                f"measure {text!r}: trec_eval's {name} is {_NOT_NUMBERS[name][1]}, not a value "
                "per query that ragnb evaluate averages; ragnb trec-eval prints it"
            )
        known = name in TREC_MEASURES
        spec = trec_eval_name(name) if known else None
        cuts = spec is not None and spec.syntax == "list" and spec.over == "k"
        listed = "," in param or "=" in param or (spec is not None and spec.syntax != "pairs")
        if name in MEASURE_SETS and not dot:
            parts = [(n, None) for n in MEASURE_SETS[name] if n not in ("runid", "num_q")]
        elif known and ((dot and listed) or (not dot and cuts)):
            parts = [(name, param or None)]
        else:
            out.append(text)
            continue
        for one, one_param in parts:
            for shown, m in trec_eval_measures(one, one_param):
                if m is None:
                    if trec_eval_family(one) is None:  # relstring: no number per query
                        continue
                    raise InputError(
                        f"measure {text!r}: {shown} is not one ragnb measure; ragnb trec-eval "
                        "prints it"
                    )
                out.append(m)
    return out
