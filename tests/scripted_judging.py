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


def scripted_judge(server: Any, tmp_path: Any, *, prices: Any = None, **kwargs: Any) -> Any:
    """An ``OpenAIJudge`` of model ``judge-test`` on the scripted server: fast retries, a cache
    and a ledger (priced by ``prices``) under ``tmp_path``, no progress bar; ``kwargs`` override."""
    from ragnb.core.cache import Cache
    from ragnb.judge import OpenAIJudge
    from ragnb.llm.ledger import Ledger
    from ragnb.llm.transport import RetryPolicy

    kwargs.setdefault("retry", RetryPolicy(backoff_base=0.01, backoff_max=0.05, timeout=5.0))
    kwargs.setdefault("cache", Cache(tmp_path / "cache"))
    kwargs.setdefault("ledger", Ledger(tmp_path / "ledger.jsonl", prices=prices))
    kwargs.setdefault("progress", False)
    kwargs.setdefault("api_key", "sk-test")
    return OpenAIJudge("judge-test", base_url=server.base_url, **kwargs)
