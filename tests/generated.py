"""Helpers for the property tests that generate qrels and runs."""

from __future__ import annotations

from typing import Any

import pandas as pd


def shares_no_query(qrels: Any, run: dict[str, dict[str, float]]) -> bool:
    """A run with ranked documents, none of them for a query the qrels judge: ``evaluate``
    refuses it (every query would score 0)."""
    if isinstance(qrels, pd.DataFrame):
        judged = set(qrels["query_id"])
    else:
        judged = {q for q, docs in qrels.items() if docs}
    ranked = {q for q, docs in run.items() if docs}
    return bool(ranked) and not ranked & judged
