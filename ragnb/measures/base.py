"""Measure value objects, their names, the family registry and the alias table.

A measure is a family (``P``, ``nDCG``, ``F``, ...), an optional cutoff and named parameters. Its
name is canonical and round-trips: ``str(parse_measure(s)) == s`` for every canonical ``s``, and
``parse_measure(str(m)) == m`` for every measure ``m``.

Grammar
-------
``FAMILY[(param=value[,param=value...])][@CUTOFF]``, for example ``P@5``, ``RR``, ``RR@10``,
``P(rel=2)@10``, ``F(alpha=0.5,rel=2)@10``. Parameters print in the family's canonical order and a
parameter at its default value is omitted (``P(rel=1)@10`` is printed ``P@10``). Floats print in
their shortest round-trip form without a trailing ``.0`` (``alpha=1``, ``alpha=0.25``).

Aliases
-------
Other tools' names are accepted and normalised to the canonical name: trec_eval's (``P_10``,
``recall_100``, ``ndcg_cut_10``, ``ndcg``, ``recip_rank``, ``success_10``, also with a dot:
``P.10``), ranx's (``precision@10``, ``recall@100``, ``ndcg@10``, ``mrr``, ``hit_rate@10``,
``f1@10`` = ``F(alpha=0.5)@10``) and ir_measures' (its names are ours: ``nDCG@10``,
``P(rel=2)@10``, ``R@100``, ``RR``, ``Success@10``, ``Judged@10``; plus ``NDCG``, ``MRR``,
``Precision``, ``Recall``). ``HitRate@10`` is ``Success@10``. Average precision is ``AP``
(``map``, ``map_cut_10``, ``AP@10``, ranx ``map@10``); trec_eval's ``Rprec``, ``infAP``,
``num_ret``, ``num_rel``, ``num_rel_ret``, ``iprec_at_recall_0.50`` and ir_measures' ``ERR@10``,
``RBP(p=0.8)``, ``IPrec@0.5``, ``NumRet(rel=1)``, ``nDCG(dcg='exp-log2')@10``, ``alpha_nDCG@10``
and ranx's ``r-precision``, ``ndcg_burges@10``, ``rbp.95`` are read too (see each module). A
family's trec_eval names are data on it (:class:`TrecEvalName`);
:mod:`ragnb.measures.trec_names` answers from them.

The model is ir_measures' ``measures/base.py`` (MacAvaney et al., ECIR 2022).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

import numpy as np

from ragnb.errors import InputError
from ragnb.measures.kernel import RankingArrays, check_arrays

__all__ = [
    "Measure",
    "MeasureFamily",
    "ParamSpec",
    "TrecEvalName",
    "families",
    "parse_measure",
    "parse_measures",
    "register_alias",
    "register_family",
    "register_trec_alias",
    "trec_eval_names",
]

ParamValue = int | float
Kernel = Callable[..., np.ndarray]


@dataclass(frozen=True)
class ParamSpec:
    """One parameter of a measure family.

    Attributes
    ----------
    name : str
    kind : {int, float}
        Values are parsed and stored as this type.
    default : int or float or None
        None makes the parameter required (it is then always printed).
    low, high : float, optional
        Inclusive bounds.
    doc : str
    """

    name: str
    kind: type
    default: ParamValue | None = None
    low: float | None = None
    high: float | None = None
    doc: str = ""

    def coerce(self, value: Any, where: str) -> ParamValue:
        """Parse (from str) or check a value; raise InputError naming ``where`` if bad."""
        if isinstance(value, str):
            text = value.strip()
            try:
                if self.kind is int:
                    if not re.fullmatch(r"[+-]?\d+", text):
                        raise ValueError
                    value = int(text)
                else:
                    value = float(text)
            except ValueError:
                raise InputError(
                    f"{where}: parameter {self.name}={text!r} is not {self._kind_name()}"
                ) from None
        elif isinstance(value, bool) or not isinstance(value, int | float | np.number):
            raise InputError(f"{where}: parameter {self.name}={value!r} is not {self._kind_name()}")
        elif self.kind is int:
            if not float(value).is_integer():
                raise InputError(f"{where}: parameter {self.name}={value!r} is not an integer")
            value = int(value)
        else:
            value = float(value)
        if self.kind is float and not math.isfinite(value):
            raise InputError(f"{where}: parameter {self.name}={value!r} is not finite")
        if (self.low is not None and value < self.low) or (
            self.high is not None and value > self.high
        ):
            raise InputError(
                f"{where}: parameter {self.name}={value!r} is outside [{self.low}, {self.high}]"
            )
        return value

    def _kind_name(self) -> str:
        return "an integer" if self.kind is int else "a number"


REL = ParamSpec(
    "rel", int, 1, doc="minimum grade counted relevant (inclusive), as trec_eval's relevance_level"
)
ALPHA = ParamSpec("alpha", float, None, 0.0, 1.0, doc="trade-off weight in [0, 1], required")


#: trec_eval's default cutoffs of ``P``, ``recall``, ``ndcg_cut``, ``map_cut`` and
#: ``relative_P`` (``meas_init.c``'s ``long_cutoff_array``).
TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


@dataclass(frozen=True)
class TrecEvalName:
    """A name trec_eval 10.0 gives a family's measures, and how its ``-m NAME.PARAMS`` reads.

    Attributes
    ----------
    name : str
        trec_eval's name: ``"P"``, ``"map"``, ``"iprec_at_recall"``.
    syntax : {"pairs", "list", "values", "numbers"}
        What the text after the dot of ``-m`` holds. ``"list"``: numbers, one measure each,
        setting ``over`` (``P.5,10`` is ``P@5`` and ``P@10``, printed ``P_5`` and ``P_10``;
        ``iprec_at_recall..1`` is ``IPrec(recall=0.1,...)``, printed ``iprec_at_recall_0.10``).
        ``"values"``: numbers setting the parameters ``reads`` in order (``utility.2,-1,0,0``:
        ``a``, ``b``, ``c``, ``d``; one parameter reads the first number, as ``set_F``).
        ``"numbers"``: numbers that make no one ragnb measure (``11pt_avg``'s recall levels,
        ``relstring``'s length). ``"pairs"`` (trec_eval's other measures): ``name=value``
        pairs, setting the parameters ``reads`` (``rbp.p=0.8``); another pair, such as a gain
        per level (``ndcg.1=3,2=9``), makes no one ragnb measure.
    over : str, optional
        For ``"list"``: ``"k"``, the cutoff, or the parameter the numbers set (``"recall"``).
    defaults : tuple of float
        The numbers a bare name stands for: the cutoffs or levels of a ``"list"``
        (``P``: 5, 10, 15, 20, 30, 100, 200, 500, 1000), ``relstring``'s length.
    reads : tuple of str
        The parameters set by ``"values"`` and ``"pairs"``.
    params : mapping of str to int or float
        Parameters implied by the name (``iprec_at_recall``: ``trec_eval=10``).

    Notes
    -----
    How trec_eval prints a measure follows from its family's ``aggregate``: ``"sum"`` is a count,
    printed ``%ld`` and summed in the ``all`` line; ``"gmean"`` prints in the ``all`` line only;
    ``"mean"`` prints ``%6.4f``. Every family with a ``rel`` parameter takes trec_eval's ``-l``
    there, and one with ``n`` trec_eval's ``-N``.

    Examples
    --------
    >>> TrecEvalName("P", "list", over="k", defaults=(5, 10)).printed(10)
    'P_10'
    >>> TrecEvalName("Rprec_mult", "list", over="mult", defaults=(0.2,)).printed(0.2)
    'Rprec_mult_0.20'
    """

    name: str
    syntax: Literal["pairs", "list", "values", "numbers"] = "pairs"
    over: str | None = None
    defaults: tuple[float, ...] = ()
    reads: tuple[str, ...] = ()
    params: Mapping[str, ParamValue] = field(default_factory=dict)

    def printed(self, value: float | None = None, text: str | None = None) -> str:
        """The name trec_eval prints: for one number of a ``"list"`` (``P_10``,
        ``iprec_at_recall_0.10``), else with the parameter text as given (``utility_2,-1,0,0``)."""
        if self.syntax == "list" and value is not None:
            return f"{self.name}_{int(value)}" if self.over == "k" else f"{self.name}_{value:3.2f}"
        return self.name if text is None else f"{self.name}_{text}"

    def alias_pattern(self) -> str:
        """The whole-name pattern :func:`parse_measure` reads the name with: ``P_10`` and
        ``P.10`` for a list of cutoffs, ``Rprec_mult_0.2`` for a list of a parameter, the bare
        name otherwise."""
        name = re.escape(self.name)
        if self.syntax != "list":
            return name
        if self.over == "k":
            return rf"{name}[._](?P<k>\d+)"
        return rf"{name}[._](?P<{self.over}>\d*\.?\d+)"


@dataclass(frozen=True)
class MeasureFamily:
    """A family of measures sharing a kernel: ``P``, ``nDCG``, ``F``, ...

    Attributes
    ----------
    name : str
        The canonical head of the names (``"nDCG"``).
    kernel : callable
        ``kernel(arrays, k, **params) -> ndarray of shape (n_queries,)``; ``k`` is the cutoff or
        None. Private, vectorised, no validation.
    params : tuple of ParamSpec
        In canonical print order.
    cutoff : {"required", "optional", "none"}
        ``"none"``: the family takes no cutoff (``NumRel``).
    depth : callable, optional
        ``depth(k) -> int or None``: the ranks the kernel reads (default ``k``; None = all).
    flags : callable, optional
        ``flags(arrays, k, **params) -> {flag_name: ndarray of bool, shape (n_queries,)}``:
        per-query conditions worth counting in a report (e.g. F_e's short runs).
    summary : str
        One line, with the formula.
    aggregate : {"mean", "sum", "gmean"}
        How :func:`ragnb.evaluation.evaluate.evaluate` aggregates the per-query values: the macro
        mean, the sum over queries (trec_eval's and ir_measures' ``num_ret``, ``num_rel``), or the
        geometric mean of the values floored at 1e-5 (trec_eval's ``gm_map``, ``gm_bpref``).
    trec_eval : tuple of TrecEvalName
        trec_eval 10.0's names of the family's measures (``P``; ``map`` for ``AP``): they parse
        as aliases, and :mod:`ragnb.measures.trec_names` answers with them.
    """

    name: str
    kernel: Kernel
    params: tuple[ParamSpec, ...] = ()
    cutoff: Literal["required", "optional", "none"] = "required"
    depth: Callable[[int | None], int | None] | None = None
    flags: Callable[..., dict[str, np.ndarray]] | None = None
    summary: str = ""
    aggregate: Literal["mean", "sum", "gmean"] = "mean"
    trec_eval: tuple[TrecEvalName, ...] = ()

    def param(self, name: str) -> ParamSpec | None:
        for spec in self.params:
            if spec.name == name:
                return spec
        return None


_FAMILIES: dict[str, MeasureFamily] = {}
_HEAD_ALIASES: dict[str, tuple[str, dict[str, ParamValue]]] = {}
_TREC_ALIASES: list[tuple[re.Pattern[str], str, dict[str, ParamValue]]] = []
_TREC_EVAL_NAMES: dict[str, tuple[str, TrecEvalName]] = {}


def register_family(
    family: MeasureFamily, *, aliases: Iterable[str] = (), trec: Iterable[str] = ()
) -> MeasureFamily:
    """Add a family to the registry (its name must be new), with its plain aliases.

    The family's trec_eval names (:attr:`MeasureFamily.trec_eval`) are read as aliases too:
    ``P_10`` and ``P.10`` for a list of cutoffs, the bare name otherwise (unless it is the
    family's name or a head alias, such as ``map``, which also reads ``map@10``).

    Parameters
    ----------
    family : MeasureFamily
    aliases : iterable of str, optional
        Other heads for the family, as :func:`register_alias` without implied parameters.
    trec : iterable of str, optional
        Whole-name patterns, as :func:`register_trec_alias` without implied parameters.

    Returns
    -------
    MeasureFamily
        ``family``.
    """
    if family.name in _FAMILIES or family.name in _HEAD_ALIASES:
        raise ValueError(f"measure family {family.name!r} is already registered")
    if not re.fullmatch(r"[^\s()@,=]+", family.name):
        raise ValueError(f"bad family name {family.name!r}")
    taken = [t.name for t in family.trec_eval if t.name in _TREC_EVAL_NAMES]
    if taken:
        raise ValueError(f"trec_eval name {taken[0]!r} is already registered")
    _FAMILIES[family.name] = family
    for alias in aliases:
        register_alias(alias, family.name)
    for trec_name in family.trec_eval:
        _TREC_EVAL_NAMES[trec_name.name] = (family.name, trec_name)
        bare = trec_name.name in _FAMILIES or trec_name.name in _HEAD_ALIASES
        if trec_name.syntax == "list" or not bare:
            register_trec_alias(trec_name.alias_pattern(), family.name, **trec_name.params)
    for pattern in trec:
        register_trec_alias(pattern, family.name)
    return family


def register_alias(alias: str, family: str, **params: ParamValue) -> None:
    """Let ``alias`` stand for ``family`` with implied ``params`` (e.g. ranx's ``f1``)."""
    if alias in _FAMILIES or alias in _HEAD_ALIASES:
        raise ValueError(f"measure name {alias!r} is already registered")
    _HEAD_ALIASES[alias] = (family, dict(params))


def register_trec_alias(pattern: str, family: str, **params: ParamValue) -> None:
    """A whole-name alias as a regular expression; a group ``k`` gives the cutoff and any other
    named group a parameter of that name (an integer or float as written).

    Example: ``register_trec_alias(r"P[._](?P<k>\\d+)", "P")`` reads trec_eval's ``P_10``.
    """
    _TREC_ALIASES.append((re.compile(pattern), family, dict(params)))


def families() -> dict[str, MeasureFamily]:
    """The registered families by canonical name (a copy)."""
    return dict(_FAMILIES)


def trec_eval_names() -> dict[str, tuple[str, TrecEvalName]]:
    """trec_eval's names the families carry: ``{name: (family, TrecEvalName)}`` (a copy), in
    the order of registration (``{"P": ("P", TrecEvalName("P", "list", ...)), ...}``)."""
    return dict(_TREC_EVAL_NAMES)


def _format_value(value: ParamValue) -> str:
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    return str(value)


@dataclass(frozen=True, eq=False, init=False, repr=False)
class Measure:
    """A measure: family, cutoff and parameters, with a canonical name.

    Equal measures have equal names; measures are immutable and hashable, so they serve as dict
    keys and set members.

    Parameters
    ----------
    family : str
        A registered family name (not an alias), e.g. ``"nDCG"``.
    cutoff : int, optional
        Rank cutoff K >= 1; required or optional depending on the family.
    **params
        The family's parameters, e.g. ``rel=2``, ``alpha=0.5``.

    Attributes
    ----------
    family : str
    cutoff : int or None
    params : mapping of str to int or float
        Every parameter of the family, defaults filled in, in canonical order.
    name : str
        The canonical name (also ``str(measure)``).

    Raises
    ------
    InputError
        Unknown family, missing or invalid cutoff, unknown, missing or out-of-range parameter.

    Examples
    --------
    >>> m = Measure("F", 10, alpha=0.5, rel=2)
    >>> str(m), m.params["rel"]
    ('F(alpha=0.5,rel=2)@10', 2)
    >>> Measure("P", 10, rel=1) == parse_measure("P_10")
    True
    """

    family: str
    cutoff: int | None
    params: Mapping[str, ParamValue]
    name: str

    def __init__(self, family: str, cutoff: int | None = None, **params: Any) -> None:
        spec = _FAMILIES.get(family)
        if spec is None:
            raise InputError(f"unknown measure family {family!r}; known: {sorted(_FAMILIES)}")
        where = family
        if cutoff is None:
            if spec.cutoff == "required":
                raise InputError(f"{where}: a cutoff is required, e.g. {family}@10")
        elif spec.cutoff == "none":
            raise InputError(f"{where}: takes no cutoff, got @{cutoff}")
        elif isinstance(cutoff, bool) or not isinstance(cutoff, int | np.integer) or cutoff < 1:
            raise InputError(f"{where}: cutoff must be a positive integer, got {cutoff!r}")
        unknown = [p for p in params if spec.param(p) is None]
        if unknown:
            allowed = [p.name for p in spec.params] or "none"
            raise InputError(f"{where}: unknown parameter {unknown[0]!r}; allowed: {allowed}")
        values: dict[str, ParamValue] = {}
        for p in spec.params:
            if p.name in params:
                values[p.name] = p.coerce(params[p.name], where)
            elif p.default is None:
                raise InputError(f"{where}: parameter {p.name!r} is required")
            else:
                values[p.name] = p.default
        shown = [
            f"{p.name}={_format_value(values[p.name])}"
            for p in spec.params
            if p.default is None or values[p.name] != p.default
        ]
        name = family + (f"({','.join(shown)})" if shown else "")
        name += "" if cutoff is None else f"@{int(cutoff)}"
        object.__setattr__(self, "family", family)
        object.__setattr__(self, "cutoff", None if cutoff is None else int(cutoff))
        object.__setattr__(self, "params", MappingProxyType(values))
        object.__setattr__(self, "name", name)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"parse_measure({self.name!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Measure):
            return self.name == other.name
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("ragnb.Measure", self.name))

    def __reduce__(self) -> tuple[Any, ...]:
        return (parse_measure, (self.name,))

    @property
    def spec(self) -> MeasureFamily:
        """The family's registry entry."""
        return _FAMILIES[self.family]

    @property
    def depth(self) -> int | None:
        """Ranks the measure reads (None: the whole run)."""
        spec = self.spec
        return spec.depth(self.cutoff) if spec.depth is not None else self.cutoff

    def compute(self, arrays: RankingArrays) -> np.ndarray:
        """Per-query values on prepared arrays.

        Parameters
        ----------
        arrays : RankingArrays
            From :func:`ragnb.measures.prepare`, with ``depth_cap`` None or >= ``self.depth``.

        Returns
        -------
        ndarray of float64, shape (n_queries,)
            A new array; the values are computed once per arrays and measure (a measure built
            on another, such as GMAP on AP, reuses them).
        """
        arrays = check_arrays(arrays)
        need = self.depth
        if arrays.depth_cap is not None and (need is None or need > arrays.depth_cap):
            raise InputError(
                f"{self}: needs {'the whole run' if need is None else f'{need} ranks'}, "
                f"but the arrays were prepared with depth={arrays.depth_cap}"
            )
        values = arrays.derived(("values", self.name), self._values)
        return values.copy()

    def _values(self, arrays: RankingArrays) -> np.ndarray:
        """The kernel's per-query values, as float64."""
        return np.asarray(self.spec.kernel(arrays, self.cutoff, **self.params), dtype=np.float64)

    def flags(self, arrays: RankingArrays) -> dict[str, np.ndarray]:
        """Per-query flags the family reports (empty for most families).

        Returns
        -------
        dict of str to ndarray of bool, shape (n_queries,)
        """
        spec = self.spec
        if spec.flags is None:
            return {}
        return spec.flags(check_arrays(arrays), self.cutoff, **self.params)


_NAME_RE = re.compile(
    r"(?P<head>[^\s()@,=]+)\s*(?:\((?P<params>[^()]*)\))?\s*(?:@\s*(?P<cutoff>[^\s()@]+))?"
)


def parse_measure(name: str | Measure) -> Measure:
    """Parse a measure name (canonical or an alias) into a :class:`Measure`.

    Parameters
    ----------
    name : str or Measure
        E.g. ``"nDCG@10"``, ``"P(rel=2)@10"``, ``"ndcg_cut_10"``, ``"mrr"``. A Measure is returned
        unchanged.

    Returns
    -------
    Measure
        Its name round-trips: ``parse_measure(str(m)) == m``.

    Raises
    ------
    InputError
        Naming the string, when it is not a known measure or its parameters are invalid.

    Examples
    --------
    >>> str(parse_measure("ndcg_cut_10")), str(parse_measure("hit_rate@5"))
    ('nDCG@10', 'Success@5')
    >>> str(parse_measure("F(rel=2, alpha=0.50)@10"))
    'F(alpha=0.5,rel=2)@10'
    """
    if isinstance(name, Measure):
        return name
    if not isinstance(name, str):
        raise InputError(f"a measure must be a name or a Measure, got {type(name).__name__}")
    return _parse(name.strip())


def _build(text: str, family: str, cutoff: int | None, params: dict[str, Any]) -> Measure:
    try:
        return Measure(family, cutoff, **params)
    except InputError as err:
        raise InputError(f"measure {text!r}: {err.message}") from None


def _parse(text: str) -> Measure:
    for pattern, family, implied in _TREC_ALIASES:
        m = pattern.fullmatch(text)
        if m:
            groups = {g: v for g, v in m.groupdict().items() if v is not None}
            k = groups.pop("k", None)
            captured: dict[str, Any] = dict(implied)
            for name, value in groups.items():
                captured[name] = float(value) if any(c in value for c in ".eE") else int(value)
            return _build(text, family, None if k is None else int(k), captured)
    m = _NAME_RE.fullmatch(text)
    if m is None:
        raise InputError(f"cannot parse measure {text!r}; expected e.g. 'nDCG@10' or 'P(rel=2)@5'")
    head = m.group("head")
    params: dict[str, Any]
    if head in _FAMILIES:
        family, params = head, {}
    elif head in _HEAD_ALIASES:
        family, implied = _HEAD_ALIASES[head]
        params = dict(implied)
    else:
        raise InputError(
            f"unknown measure {text!r}; known families: {', '.join(sorted(_FAMILIES))} "
            "(aliases from trec_eval, ranx and ir_measures are accepted)"
        )
    if m.group("params") is not None:
        for item in m.group("params").split(","):
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep or not key:
                raise InputError(f"measure {text!r}: expected param=value, got {item.strip()!r}")
            if key in params:
                raise InputError(f"measure {text!r}: parameter {key!r} given twice")
            params[key] = value
    cutoff_text = m.group("cutoff")
    cutoff = None
    if cutoff_text is not None:
        if not re.fullmatch(r"\d+", cutoff_text):
            raise InputError(f"measure {text!r}: cutoff {cutoff_text!r} is not a positive integer")
        cutoff = int(cutoff_text)
    return _build(text, family, cutoff, params)


def parse_measures(names: Iterable[str | Measure] | str | Measure) -> list[Measure]:
    """Parse several measures; duplicates (after normalisation) are kept once, first wins.

    Parameters
    ----------
    names : iterable of str or Measure, or a single one

    Returns
    -------
    list of Measure

    Raises
    ------
    InputError
        On the first unknown or invalid name, or an empty list.

    Examples
    --------
    >>> [str(m) for m in parse_measures(["P_10", "P@10", "recip_rank"])]
    ['P@10', 'RR']
    """
    if isinstance(names, str | Measure):
        names = [names]
    out: dict[Measure, None] = {}
    for name in names:
        out.setdefault(parse_measure(name), None)
    if not out:
        raise InputError("no measures given")
    return list(out)
