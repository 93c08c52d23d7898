"""Query rewriting through an LLM judge's client: "extract and restate the core information need".

Used by the golden-set pipeline's first stage (S1, Dallaire's "rewrite queries") and by the
embedder diagnostics' conversational-noise study, which both need the same rewrite with the
judge's retries, cache and cost ledger.

References
----------
.. [1] E. Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and
   Cost-Latency-Quality Trade-offs", arXiv:2511.09545, 2025, Section 3.4 (S1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragnb.errors import InputError
from ragnb.judge.prompts import load_prompt

__all__ = ["REWRITE_STAGE", "LLMRewriter"]

#: The ledger stage of rewrite calls.
REWRITE_STAGE = "s1_rewrite"


class LLMRewriter:
    """S1 query rewriting by an LLM: "extract and restate the core information need".

    Uses an :class:`~ragnb.judge.OpenAIJudge`'s client, retries, cache and ledger (stage
    ``s1_rewrite``) with its own prompt, the shipped ``query-rewrite`` template (an ``extract``
    template whose answer is the one line ``1. <restated need>``). An answer that stays invalid
    after the reminder, or no answer, keeps the normalised original, with the reason in the S1
    frame.

    Parameters
    ----------
    judge : OpenAIJudge

    Attributes
    ----------
    rewriter_id : str
        ``"llm-rewrite:<model>#<prompt hash8>"``: part of the S1 stage hash.
    """

    def __init__(self, judge: Any) -> None:
        if not hasattr(judge, "make_call") or not hasattr(judge, "run"):
            raise InputError("LLMRewriter needs an OpenAIJudge (make_call and run)")
        self.judge = judge
        self.template = load_prompt("query-rewrite")
        self.rewriter_id = f"llm-rewrite:{judge.model}#{self.template.sha256[:8]}"

    def many(self, texts: Sequence[str]) -> list[tuple[str | None, str]]:
        """``(rewritten text or None, reason)`` per query text, in order."""
        calls = [
            self.judge.make_call(self.template, {"query": t}, item=f"q{i}", query_id=f"q{i}")
            for i, t in enumerate(texts)
        ]
        out: list[tuple[str | None, str]] = []
        for r in self.judge.run(calls, stage=REWRITE_STAGE, kind="extract"):
            if r.valid:
                out.append((" ".join(r.value).strip() or None, ""))
            else:
                out.append((None, r.reason or r.status))
        return out

    def __call__(self, text: str) -> str | None:
        return self.many([text])[0][0]
