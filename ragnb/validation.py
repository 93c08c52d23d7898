"""Argument checks shared by every layer, raising :class:`ragnb.errors.InputError`.

One home for the small checks the rest of ragnb repeats: a positive integer (a cutoff K, a
depth, a count), the columns a frame must hold, and the L2 normalisation of embedding rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError

__all__ = ["check_positive_int", "l2_normalise", "require_columns"]


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
