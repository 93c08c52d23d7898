"""Publication tables of a :func:`~ragnb.stats.compare` result, in Markdown or LaTeX, laid out
like ranx's comparison report.

Systems are rows (lettered ``a, b, ...`` in input order), measures are columns, the best mean of
each measure is in bold, and a superscript lists the letters of the systems the row is
significantly better than (adjusted p <= alpha with a positive mean difference, on the pairs that
were compared). This is ranx's ``Report.to_latex`` layout (Bassani 2022, ranx
``data_structures/report.py``); the significance comes from the test chosen in
:func:`~ragnb.stats.compare` (the paired randomization test by default; Tukey's HSD, ...) with
its correction (Holm by default), where ranx applies no correction. ``compare(...,
correction="none", alpha=max_p)`` makes the same decisions as ``ranx.compare(...,
stat_test="fisher", max_p=max_p)`` up to Monte Carlo error (``tests/test_interop_formats.py``).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.stats.comparison import ComparisonResult
from ragnb.stats.procedures import TEST_NAMES

__all__ = ["comparison_table", "latex_escape", "significance_markers"]

_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_MARKDOWN_SPECIAL = "\\`*_|<>[]"


def latex_escape(text: object) -> str:
    """``text`` with LaTeX's special characters (``\\ & % $ # _ { } ~ ^``) escaped."""
    return "".join(_LATEX_SPECIAL.get(c, c) for c in str(text))


def _markdown_escape(text: object) -> str:
    return "".join(f"\\{c}" if c in _MARKDOWN_SPECIAL else c for c in str(text)).replace("\n", " ")


def significance_markers(comparison: ComparisonResult) -> pd.DataFrame:
    """The letters of the systems each system is significantly better than, per measure.

    Parameters
    ----------
    comparison : ComparisonResult
        From :func:`ragnb.stats.compare`.

    Returns
    -------
    DataFrame
        Index ``system`` (input order), one str column per measure: the sorted letters (``a``
        for the first system...) of the systems the row beats: the pair was compared, its
        adjusted p-value is at most alpha and the row's paired mean is higher. ``""`` where
        none.

    Raises
    ------
    InputError
        If ``comparison`` is not a ComparisonResult or has more than 26 systems.
    """
    if not isinstance(comparison, ComparisonResult):
        raise InputError(f"expected a ComparisonResult, got {type(comparison).__name__}")
    systems, measures = list(comparison.systems), list(comparison.measures)
    if len(systems) > len(_LETTERS):
        raise InputError(f"at most {len(_LETTERS)} systems can be lettered, got {len(systems)}")
    letter = {s: _LETTERS[i] for i, s in enumerate(systems)}
    beaten: dict[tuple[str, str], set[str]] = {}
    pairs = comparison.pairs
    for row in pairs[pairs["significant"] & (pairs["difference"] != 0)].itertuples(index=False):
        up = row.difference > 0
        winner, loser = (row.system_a, row.system_b) if up else (row.system_b, row.system_a)
        beaten.setdefault((winner, row.measure), set()).add(letter[loser])
    columns = {m: ["".join(sorted(beaten.get((s, m), ()))) for s in systems] for m in measures}
    return pd.DataFrame(columns, index=pd.Index(systems, name="system"))


def comparison_table(
    comparison: ComparisonResult,
    format: Literal["markdown", "latex"] = "markdown",  # noqa: A002 - the natural name
    *,
    digits: int = 4,
    markers: bool = True,
    caption: str | None = None,
    label: str = "tab:comparison",
) -> str:
    """A comparison as a Markdown or LaTeX table with ranx-style significance markers.

    Parameters
    ----------
    comparison : ComparisonResult
        From :func:`ragnb.stats.compare`.
    format : {"markdown", "latex"}, default "markdown"
        Markdown: a pipe table, markers as ``<sup>bc</sup>`` (rendered by Jupyter and GitHub).
        LaTeX: a ``table`` with a booktabs ``tabular`` (needs ``\\usepackage{booktabs}``),
        markers as ``$^{bc}$`` padded with ``\\hphantom`` so the columns align, as ranx does.
    digits : int, default 4
        Decimals shown. "Best" is decided on the rounded means (higher is better), so every
        system tied at the shown precision is bold.
    markers : bool, default True
        False leaves out the superscripts.
    caption : str, optional
        LaTeX only (escaped). Default: a sentence naming the test, the correction, alpha and
        the number of queries.
    label : str, default "tab:comparison"
        LaTeX ``\\label`` (not escaped).

    Returns
    -------
    str
        The table; the LaTeX form is a ``table`` environment ready to paste. System and measure
        names are escaped (LaTeX: ``\\ & % $ # _ { } ~ ^``; Markdown: ``\\ ` * _ | < > [ ]``).

    Raises
    ------
    InputError
        On an unknown ``format``, a negative ``digits``, or more than 26 systems.

    References
    ----------
    Bassani, E. (2022). ranx: A blazing-fast Python library for ranking evaluation and
    comparison. ECIR (the report's LaTeX table). Holm (1979) for the default correction.

    Examples
    --------
    >>> from ragnb.stats import compare
    >>> per_query = pd.DataFrame({
    ...     "retriever": ["x"] * 4 + ["y_1"] * 4,
    ...     "query_id": ["q1", "q2", "q3", "q4"] * 2,
    ...     "measure": "P@1",
    ...     "value": [1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0]})
    >>> print(comparison_table(compare(per_query)))
    | # | System | P@1 |
    |---|---|---:|
    | a | x | **0.7500** |
    | b | y\\_1 | 0.2500 |
    """
    if format not in ("markdown", "latex"):
        raise InputError(f"unknown table format {format!r}; use 'markdown' or 'latex'")
    if isinstance(digits, bool) or not isinstance(digits, int | np.integer) or digits < 0:
        raise InputError(f"digits must be a non-negative integer, got {digits!r}")
    sup = significance_markers(comparison)
    means = comparison.means_wide()
    systems, measures = list(comparison.systems), list(comparison.measures)
    best = {m: np.nanmax(np.round(means[m].to_numpy(dtype=float), digits)) for m in measures}
    cells: dict[str, list[tuple[str, bool, str]]] = {}
    for m in measures:
        column = []
        for s in systems:
            value = float(means.loc[s, m])
            shown = "NA" if np.isnan(value) else f"{value:.{digits}f}"
            bold = not np.isnan(value) and round(value, digits) == best[m]
            column.append((shown, bool(bold), sup.loc[s, m] if markers else ""))
        cells[m] = column
    if format == "markdown":
        return _markdown(systems, measures, cells)
    return _latex(comparison, systems, measures, cells, caption, label)


def _markdown(
    systems: list[str], measures: list[str], cells: dict[str, list[tuple[str, bool, str]]]
) -> str:
    lines = [
        "| # | System | " + " | ".join(_markdown_escape(m) for m in measures) + " |",
        "|---|---|" + "---:|" * len(measures),
    ]
    for i, s in enumerate(systems):
        row = [_LETTERS[i], _markdown_escape(s)]
        for m in measures:
            shown, bold, letters = cells[m][i]
            text = f"**{shown}**" if bold else shown
            row.append(text + (f"<sup>{letters}</sup>" if letters else ""))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def _latex(
    comparison: ComparisonResult,
    systems: list[str],
    measures: list[str],
    cells: dict[str, list[tuple[str, bool, str]]],
    caption: str | None,
    label: str,
) -> str:
    settings = comparison.settings
    if caption is None:
        n = int(comparison.means["n_queries"].max()) if len(comparison.means) else 0
        correction = settings.get("correction", "holm")
        caption = (
            f"Mean over {n} queries; the best of each measure in bold. A superscript letter "
            f"marks a system significantly better than the lettered one ("
            f"{TEST_NAMES[settings.get('test', 'randomization')]}, {correction} correction over "
            f"{settings.get('n_comparisons', '?')} comparisons, adjusted p <= "
            f"{settings.get('alpha', 0.05)})."
        )
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\caption{" + latex_escape(caption) + "}",
        r"\label{" + label + "}",
        r"\begin{tabular}{cl" + "c" * len(measures) + "}",
        r"\toprule",
        r"\# & System & " + " & ".join(latex_escape(m) for m in measures) + r" \\",
        r"\midrule",
    ]
    letters_all = _LETTERS[: len(systems)]
    for i, s in enumerate(systems):
        row = [_LETTERS[i], latex_escape(s)]
        for m in measures:
            shown, bold, letters = cells[m][i]
            text = r"\textbf{" + shown + "}" if bold else shown
            if letters:
                text += "$^{" + letters + "}$"
            missing = "".join(c for c in letters_all if c not in letters and c != _LETTERS[i])
            if any(cells[m][j][2] for j in range(len(systems))) and missing:
                text += r"\hphantom{$^{" + missing + "}$}"
            row.append(text)
        lines.append(" & ".join(row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines)
