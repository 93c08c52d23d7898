"""The one chat client: OpenAI-compatible chat calls through the cache, the ledger and retries.

Every LLM use of ragnb sends its calls through a :class:`ChatClient`: the judge
(:class:`ragnb.judge.OpenAIJudge` grades and ranks on one), query rewriting
(:class:`ragnb.rewrite.LLMRewriter`), synthetic queries (notebook 01),
the Primer answers (:func:`ragnb.studies.correlation.generate.generate_graded`), claim extraction
(:func:`ragnb.context.llm_context_recall`) and listwise reranking
(:class:`ragnb.rerank.LLMListwiseReranker`, through a judge).

Modules
-------
:mod:`ragnb.llm.prompts`
    Editable prompt templates (YAML) and their strict answer parsers.
:mod:`ragnb.llm.calls`
    One call (:class:`LLMCall`, its cache key) and what it gave (:class:`CallResult`).
:mod:`ragnb.llm.sender`
    The engine: cache, bounded concurrency, the transport's retries, reminder, ledger.
:mod:`ragnb.llm.batch`
    The provider's batch API (``batch=True``): one batch per job, resumed after a crash.
:mod:`ragnb.llm.client`
    :class:`ChatClient`, the settings in one place (retries as one
    :class:`~ragnb.llm.transport.RetryPolicy`).
:mod:`ragnb.llm.server`
    :class:`LocalLLMServer`, a llama.cpp server on 127.0.0.1 with a packaged model; its
    :meth:`~LocalLLMServer.client_options` set up a client in one call.

Examples
--------
>>> from ragnb.llm import ChatClient, LocalLLMServer
>>> with LocalLLMServer() as server:  # doctest: +SKIP
...     client = ChatClient(**server.client_options(), progress=False)
"""

from ragnb.llm.calls import CallResult, LLMCall
from ragnb.llm.client import ChatClient
from ragnb.llm.prompts import PromptTemplate, available_prompts, load_prompt
from ragnb.llm.server import LocalLLMServer

__all__ = [
    "CallResult",
    "ChatClient",
    "LLMCall",
    "LocalLLMServer",
    "PromptTemplate",
    "available_prompts",
    "load_prompt",
]
