"""Pieces shared by the judge tests that grade through the scripted server (``openai_server``):
the items they grade, and how a handler reads which passage a request is about."""

from __future__ import annotations

import re
from typing import Any

DOC = re.compile(r"passage number (\d+)")


def passage_number(request: Any) -> int:
    """The n of "passage number n" in a grade request's user message."""
    return int(DOC.search(request.json["messages"][1]["content"]).group(1))


def items(n: int = 4, **extra: str) -> list[dict[str, str]]:
    """``n`` pairs of query ``q1`` with the passages "passage number 0" to ``n - 1``; ``extra``
    columns are added to each."""
    return [
        {
            "query_id": "q1",
            "doc_id": f"d{i}",
            "query": "how do I sort a list?",
            "passage": f"passage number {i}: sorted(iterable) returns a new list",
            **extra,
        }
        for i in range(n)
    ]
