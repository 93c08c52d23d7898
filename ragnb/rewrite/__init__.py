"""Query rewriting before retrieval: rule-based denoisers and an LLM rewriter.

Two studies and the golden-set pipeline rewrite queries: the CLQ sweep's rewriting axis (none,
``denoise``, ``llm``), the embedder diagnostics' conversational-noise mitigation, and the golden
set's first stage (S1). Both kinds live here, one layer below them:

- :func:`denoise_query` (:mod:`ragnb.rewrite.rules`): Unicode and regular-expression rules, no
  model, microseconds per query;
- :class:`LLMRewriter` (:mod:`ragnb.rewrite.llm`): "extract and restate the core information
  need" through a :class:`ragnb.llm.ChatClient` (its cache, retries and cost ledger).

:func:`noise_by_turn` (:mod:`ragnb.rewrite.turns`) runs the rule-based denoiser over the search
queries of a conversation's traces, turn by turn.

References
----------
Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and Cost-Latency-Quality
Trade-offs", arXiv:2511.09545, sections 3.4 (S1), 4.1 and 4.4.1.
"""

from ragnb.rewrite.llm import REWRITE_STAGE, LLMRewriter
from ragnb.rewrite.rules import RULES, denoise_query
from ragnb.rewrite.turns import noise_by_turn, query_noise

__all__ = ["REWRITE_STAGE", "RULES", "LLMRewriter", "denoise_query", "noise_by_turn", "query_noise"]
