"""Tables for reports: already-computed frames formatted for reading; no computation.

:func:`provenance_markdown` turns a provenance dict (dataset, models, versions, cache) into the
"what produced these numbers" block every report opens with; :func:`style_scores` formats a score
table with four decimals.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ragnb.core.paths import display_path

__all__ = ["provenance_markdown", "style_scores"]


def _md_escape(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def provenance_markdown(prov: dict[str, Any]) -> str:
    """Markdown naming the dataset, the retrievers and models, the versions and the cache.

    Parameters
    ----------
    prov : dict
        As returned by :meth:`ragnb.studies.retrieval.study.Comparison.provenance`: keys
        ``dataset``, ``retrievers``, ``timings_s``, ``cache``, ``versions`` (others are ignored).

    Returns
    -------
    str
    """
    ds = prov.get("dataset", {})
    lines = ["## What produced these numbers", ""]
    grades = ", ".join(f"{g}: {n}" for g, n in ds.get("grades", {}).items())
    lines.append(
        f"**Dataset** `{_md_escape(ds.get('dataset'))}` (split `{ds.get('split')}`): "
        f"{ds.get('documents')} documents, {ds.get('judged_queries')} judged queries of "
        f"{ds.get('queries')}, {ds.get('qrels_pairs')} judgements (grade: count {grades}). "
        f"Folder: `{_md_escape(display_path(ds['path']) if ds.get('path') else None)}`."
    )
    recipe = prov.get("dataset_recipe") or {}
    if recipe:
        lines.append(
            f"Built by `ragnb data build-sample` under Python "
            f"{_md_escape(recipe.get('python_version'))}."
        )
    lines += ["", "| retriever | configuration | index + retrieve (s) |", "|---|---|---|"]
    timings = prov.get("timings_s", {})
    for name, desc in prov.get("retrievers", {}).items():
        conf = ", ".join(f"{k}={v}" for k, v in desc.items() if k != "retriever")
        lines.append(f"| {name} | {_md_escape(conf)} | {timings.get(name, float('nan')):.1f} |")
    cache = prov.get("cache", {})
    lines += ["", f"**Cache** `{_md_escape(cache.get('path'))}`:"]
    for ns, c in cache.get("namespaces", {}).items():
        lines.append(
            f"- `{ns}`: {c.get('hits', 0)} hits, {c.get('misses', 0)} misses, "
            f"{c.get('writes', 0)} written; key = ({', '.join(c.get('key_schema') or [])})"
        )
    vers = prov.get("versions", {})
    lines += ["", "**Versions** " + ", ".join(f"{k} {v}" for k, v in vers.items())]
    return "\n".join(lines)


def style_scores(frame: pd.DataFrame, decimals: int = 4) -> Any:
    """A pandas ``Styler`` showing floats with ``decimals`` digits and integers as they are."""
    floats = [c for c in frame.columns if pd.api.types.is_float_dtype(frame[c])]
    return frame.style.format({c: f"{{:.{decimals}f}}" for c in floats}, na_rep="NA")
