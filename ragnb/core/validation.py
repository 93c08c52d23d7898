"""Argument checks shared by every layer, raising :class:`ragnb.errors.InputError`.

One home for the small checks the rest of ragnb repeats: a positive integer (a cutoff K, a
depth, a count), the columns a frame must hold, and the L2 normalisation of embedding rows.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, Literal, TypeVar, overload

import numpy as np
import pandas as pd

from ragnb.errors import InputError

__all__ = [
    "check_among",
    "check_choice",
    "check_int_at_least",
    "check_number_in",
    "check_positive_int",
    "check_positive_ints",
    "convert_entry",
    "l2_normalise",
    "require_columns",
]

_T = TypeVar("_T")


@overload
def check_positive_int(value: Any, name: str = ..., *, allow_none: Literal[False] = ...) -> int: ...
@overload
def check_positive_int(value: Any, name: str = ..., *, allow_none: bool) -> int | None: ...
def check_positive_int(value: Any, name: str = "k", *, allow_none: bool = False) -> int | None:
    """``value`` as an ``int`` when it is an integer >= 1 (bool is not an integer here).

    Parameters
    ----------
    value : Any
        The value to check.
    name : str, default "k"
        The argument's name, for the message.
    allow_none : bool, default False
        Accept ``None`` (returned as is), for "no cutoff".

    Returns
    -------
    int or None

    Raises
    ------
    InputError
        ``"<name> must be a positive integer, got <value>"`` otherwise.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        extra = " or None" if allow_none else ""
        raise InputError(f"{name} must be a positive integer{extra}, got {value!r}")
    return int(value)


def require_columns(
    frame: pd.DataFrame,
    columns: Sequence[str],
    what: str,
    *,
    path: str | None = None,
) -> None:
    """Raise unless ``frame`` holds every column of ``columns``.

    Parameters
    ----------
    frame : DataFrame
    columns : sequence of str
        Required column names.
    what : str
        What the frame holds, for the message (``"qrels frame"``, ``"ranked samples"``).
    path : str, optional
        The file the frame was read from, named in the error.

    Raises
    ------
    InputError
        ``"<what> lacks column(s) [...]; it has [...]"`` with the first missing column.
    """
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(
            f"{what} lacks column(s) {missing}; it has {list(frame.columns)}",
            path=path,
            column=missing[0],
        )


def l2_normalise(vectors: Any, dtype: Any = np.float32) -> np.ndarray:
    """Rows scaled to unit L2 norm; zero rows stay zero.

    Parameters
    ----------
    vectors : array-like, shape (n, d)
    dtype : numpy dtype, default float32
        Of the result (float64 where cosines feed statistics).

    Returns
    -------
    ndarray, shape (n, d), C-contiguous
    """
    x = np.asarray(vectors, dtype=dtype)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.ascontiguousarray(x / np.where(norms == 0, 1, norms), dtype=dtype)


def check_int_at_least(value: Any, name: str, low: int, *, column: str | None = None) -> int:
    """``value`` when it is an integer (not a bool) ``>= low``.

    Parameters
    ----------
    value : Any
    name : str
        The argument's name, for the message.
    low : int
        The smallest value allowed.
    column : str, optional
        The parameter named by the error (a config field).

    Returns
    -------
    int

    Raises
    ------
    InputError
        ``"<name> must be an integer, got <value>"`` or ``"<name> must be >= <low>, got <value>"``.

    Examples
    --------
    >>> check_int_at_least(0, "max_queries", 0)
    0
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InputError(f"{name} must be an integer, got {value!r}", column=column)
    if value < low:
        raise InputError(f"{name} must be >= {low}, got {value!r}", column=column)
    return int(value)


def convert_entry(
    convert: Callable[[Any], _T], value: Any, query_id: Any, doc_id: Any, name: str, kind: str
) -> _T:
    """``convert(value)`` for one document's score or grade in a run or qrels given as records.

    Parameters
    ----------
    convert : callable
        E.g. ``float`` for a score (NaN and infinities pass: :func:`ragnb.frames.schema.check_run`
        decides on those); raises TypeError or ValueError on a bad value.
    value : Any
    query_id, doc_id : Any
        The query and document the value belongs to, named in the error.
    name, kind : str
        For the message: ``"score"`` and ``"a number"``, ``"grade"`` and ``"an integer"``.

    Returns
    -------
    The converted value.

    Raises
    ------
    InputError
        ``"<name> of <doc_id!r> is not <kind>: <value!r>"`` naming the query, when ``convert``
        raises TypeError or ValueError.

    Examples
    --------
    >>> convert_entry(float, "0.5", "q1", "d1", "score", "a number")
    0.5
    """
    try:
        return convert(value)
    except (TypeError, ValueError):
        raise InputError(
            f"{name} of {doc_id!r} is not {kind}: {value!r}", query_id=str(query_id)
        ) from None


# The checks below validate a named parameter (a config field); the error names it as its column.


def check_positive_ints(values: Iterable[Any], name: str) -> list[int]:
    """``values`` as a list of ``int`` when it holds integers >= 1 (cutoffs K, say), in order.

    An integral float (``10.0``) passes as 10; ``2.5``, a bool or a string does not. ``values``
    is read once, so a generator may be passed.

    Returns
    -------
    list of int
        Non-empty, in the order given (duplicates kept).

    Raises
    ------
    InputError
        ``"<name> must be positive integers, got <values>"`` on an empty or a bad list.

    Examples
    --------
    >>> check_positive_ints((10.0, 5), "ks")
    [10, 5]
    """
    values = list(values)
    if not values or not all(_is_positive_integral(v) for v in values):
        raise InputError(f"{name} must be positive integers, got {values}", column=name)
    return [int(v) for v in values]


def _is_positive_integral(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        return False
    return bool(float(value).is_integer() and value >= 1)


def check_number_in(
    value: Any,
    name: str,
    low: float = 0.0,
    high: float = float("inf"),
) -> float:
    """``value`` as a float when it is a real number (not a bool) in ``[low, high]``.

    Raises
    ------
    InputError
        ``"<name> must be >= <low>, got <value>"`` (no upper bound) or
        ``"<name> must lie in [<low>, <high>], got <value>"``.

    Examples
    --------
    >>> check_number_in(0.5, "alpha", 0, 1)
    0.5
    """
    number = isinstance(value, int | float | np.integer | np.floating) and not isinstance(
        value, bool
    )
    if not number or not low <= value <= high:
        bounds = f">= {low:g}" if high == float("inf") else f"lie in [{low:g}, {high:g}]"
        raise InputError(f"{name} must {bounds}, got {value!r}", column=name)
    return float(value)


def check_choice(value: Any, name: str, choices: Collection[Any]) -> None:
    """Raise unless ``value`` is one of ``choices``.

    Raises
    ------
    InputError
        ``"<name> must be one of [...], got <value>"``.
    """
    if value not in choices:
        raise InputError(f"{name} must be one of {list(choices)}, got {value!r}", column=name)


def check_among(
    values: Sequence[Any],
    name: str,
    choices: Collection[Any],
    *,
    allow_empty: bool = False,
) -> None:
    """Raise unless every item of ``values`` is one of ``choices`` (and, unless ``allow_empty``,
    there is at least one).

    Raises
    ------
    InputError
        ``"<name> must be among [...], got [...]"``.
    """
    if any(v not in choices for v in values) or not (values or allow_empty):
        raise InputError(f"{name} must be among {list(choices)}, got {list(values)}", column=name)
