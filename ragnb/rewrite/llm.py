"""Query rewriting by an LLM: "extract and restate the core information need".

Used by the golden-set pipeline's first stage (S1, Dallaire's "rewrite queries"), the CLQ
sweep's ``llm`` rewriter and the embedder diagnostics' conversational-noise study, which all need
the same rewrite through a :class:`~ragnb.llm.ChatClient` (its retries, cache and cost ledger).

References
----------
.. [1] E. Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and
   Cost-Latency-Quality Trade-offs", arXiv:2511.09545, 2025, Section 3.4 (S1).
"""

from __future__ import annotations

from collections.abc import Sequence

from ragnb.errors import InputError
from ragnb.llm.calls import LLMCall
from ragnb.llm.client import ChatClient
from ragnb.llm.prompts import load_prompt

__all__ = ["REWRITE_STAGE", "LLMRewriter"]

#: The ledger stage of rewrite calls.
REWRITE_STAGE = "s1_rewrite"


class LLMRewriter:
    """S1 query rewriting by an LLM: "extract and restate the core information need".

    Sends the shipped ``query-rewrite`` template (an ``extract`` template whose answer is the one
    line ``1. <restated need>``) through a chat client, its retries, cache and ledger (stage
    ``s1_rewrite``). An answer that stays invalid after the reminder, or no answer, keeps the
    normalised original, with the reason in the S1 frame.

    Parameters
    ----------
    client : ChatClient
        A judge's client (``OpenAIJudge.client``) will do: the rewrites then share its cache
        and ledger.

    Raises
    ------
    InputError
        When ``client`` is not a :class:`~ragnb.llm.ChatClient`.

    Attributes
    ----------
    rewriter_id : str
        ``"llm-rewrite:<model>#<prompt hash8>"``: part of the S1 stage hash.
    """

    def __init__(self, client: ChatClient) -> None:
        if not isinstance(client, ChatClient):
            raise InputError(f"LLMRewriter needs a ragnb.llm.ChatClient, got {client!r}")
        self.client = client
        self.template = load_prompt("query-rewrite")
        self.rewriter_id = f"llm-rewrite:{client.model}#{self.template.sha256[:8]}"

    def call(self, text: str, item: str) -> LLMCall:
        """The rewrite call of one query text (``item`` names it in errors and the ledger)."""
        return self.client.make_call(self.template, {"query": text}, item=item, query_id=item)

    def many(self, texts: Sequence[str]) -> list[tuple[str | None, str]]:
        """``(rewritten text or None, reason)`` per query text, in order."""
        calls = [self.call(t, f"q{i}") for i, t in enumerate(texts)]
        out: list[tuple[str | None, str]] = []
        for r in self.client.run(calls, stage=REWRITE_STAGE, kind="extract"):
            if r.valid:
                out.append((" ".join(r.value).strip() or None, ""))
            else:
                out.append((None, r.reason or r.status))
        return out

    def __call__(self, text: str) -> str | None:
        return self.many([text])[0][0]
