"""The chat client: any OpenAI-compatible chat endpoint, with the cache, the ledger and retries.

A :class:`ChatClient` renders prompt templates (:mod:`ragnb.llm.prompts`) into
:class:`~ragnb.llm.calls.LLMCall` objects with their cache keys and sends them
(:class:`~ragnb.llm.sender.CallSender`): the cache first, then bounded concurrency through the one
HTTP transport (:mod:`ragnb.llm.transport`: retries, Retry-After, backoff, circuit breaker,
redaction), one reminder of the answer format after an invalid answer, every HTTP request in the
cost ledger (:class:`~ragnb.llm.ledger.Ledger`), every final answer cached at once.

Every LLM use of ragnb goes through it: the judge (:class:`ragnb.judge.OpenAIJudge`, which adds
grading), query rewriting (:class:`ragnb.rewrite.LLMRewriter`), synthetic queries
(:class:`ragnb.studies.retrieval.querygen.QueryGenerator`), the Primer answers
(:func:`ragnb.studies.correlation.generate.generate_graded`), claim extraction
(:func:`ragnb.context.llm_context_recall`) and nugget creation and assignment
(:mod:`ragnb.judge.nuggets`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

from ragnb.core.cache import Cache
from ragnb.core.docstrings import doc_filler
from ragnb.core.provenance import safe_url
from ragnb.errors import InputError
from ragnb.llm.calls import (
    INFLIGHT_NAMESPACE,
    KEY_PARTS,
    NAMESPACE,
    CallResult,
    LLMCall,
    build_call,
)
from ragnb.llm.ledger import Ledger, PlannedCall
from ragnb.llm.prompts import PromptTemplate
from ragnb.llm.sender import SERVER_CONCURRENCY, CallSender
from ragnb.llm.transport import (
    DEFAULT_RETRY,
    RetryPolicy,
    check_request_params,
    check_retry_settings,
)

__all__ = [
    "CLIENT_ENTRIES",
    "CallOptions",
    "ChatClient",
    "ClientSettings",
    "fill_client_doc",
]

#: numpydoc entries of the client settings that :class:`ChatClient` and the classes built on it
#: (:class:`ragnb.judge.OpenAIJudge`) share; :data:`fill_client_doc` substitutes them.
CLIENT_ENTRIES: dict[str, str] = {
    "base_url": (
        "base_url : str, optional\n"
        "    Server root, e.g. ``http://localhost:8000/v1``; default ``$OPENAI_BASE_URL`` or\n"
        "    OpenAI."
    ),
    "api_key": (
        "api_key : str, optional\n"
        "    Default ``$OPENAI_API_KEY``. Sent only in the request header: never stored in cache\n"
        "    keys, results, ledgers, logs or :meth:`describe`."
    ),
    "temperature": (
        "temperature : float or None, default 0.0\n"
        "    None: not sent (models that accept only their default)."
    ),
    "request_params": (
        "request_params : dict, optional\n"
        "    Other chat completion parameters (``top_p``, ``seed``, ``max_completion_tokens``,\n"
        "    ``response_format``, ...): JSON values, part of the cache key."
    ),
    "concurrency": (
        'concurrency : int or "server", default 8\n'
        '    Requests in flight at most. ``"server"``: as many as the server answers at once,\n'
        "    as it reports them (llama.cpp's ``GET /props``, ``total_slots``:\n"
        "    :func:`ragnb.llm.sender.server_slots`), read at the start of each run; 1 when it\n"
        "    does not say."
    ),
    "rpm": (
        "rpm, tpm : float, optional\n"
        "    Requests and prompt tokens per minute at most (None: no budget of its own). One\n"
        "    budget per endpoint (base URL + model) for the whole process, shared by every\n"
        "    thread and client of it (:func:`ragnb.llm.transport.rate_limiter`): token buckets\n"
        "    charged one request and its counted prompt tokens, a burst of one second's worth.\n"
        "    The server's ``x-ratelimit-remaining-*`` and ``x-ratelimit-reset-*`` headers are\n"
        "    followed where it sends them; a 429 halves the allowed rate and each answer raises\n"
        "    it again by 2% of the limit (AIMD). A 429 is retried, and does not count toward\n"
        "    ``retry.max_attempts`` while other requests to the endpoint are answered (a rate\n"
        "    limit drops no item; a 429 with no answer in between counts: a spent quota). Each\n"
        "    ledger line records the seconds its request waited (``wait_s``). Not in cache keys\n"
        "    (a rate does not change an answer)."
    ),
    "batch": (
        "batch : bool, default False\n"
        "    Send the calls the cache cannot answer as one batch of the provider's batch API\n"
        "    (OpenAI's ``/v1/files`` + ``/v1/batches``, :mod:`ragnb.llm.batch`): asynchronous,\n"
        "    answered within 24 hours, priced at the price table's ``batch_discount`` (OpenAI:\n"
        "    half price; ledger lines flagged ``batch``). The batch is polled until it ends;\n"
        "    a run killed after submitting resumes the same batch (its state file is in the\n"
        "    cache folder's ``batches/``) instead of paying twice. Calls the batch did not\n"
        "    answer (error lines; a batch that expired, failed or was cancelled) are failures,\n"
        "    submitted again when the job runs again. Not in cache keys: a batch answer is the\n"
        "    same answer as a single request's, so the two share cache entries."
    ),
    "batch_poll_s": (
        "batch_poll_s : float, default 30.0\n    Seconds between two polls of a batch in progress."
    ),
    "retry": (
        "retry : RetryPolicy, default ragnb.llm.transport.DEFAULT_RETRY\n"
        "    Per message: HTTP requests at most (first try + retries after faults; the\n"
        "    reminder is a new message with its own attempts), seconds per request, the\n"
        "    exponential backoff when the server gives no ``Retry-After``, and the longest\n"
        "    ``Retry-After`` accepted (an item whose server asks for a longer wait fails instead\n"
        "    of waiting)."
    ),
    "reminder": (
        "reminder : bool, default True\n"
        "    Send one reminder of the answer format after an invalid answer."
    ),
    "retry_invalid": (
        "retry_invalid : bool, default False\n"
        "    Re-send items whose cached answer is invalid (default: an invalid answer is final)."
    ),
    "cache": (
        "cache : Cache, optional\n"
        "    Default: a :class:`~ragnb.core.cache.Cache` in ``cache_dir`` (default location if\n"
        "    None)."
    ),
    "ledger": (
        "ledger : Ledger, optional\n    Default: an in-memory ledger with the shipped price table."
    ),
    "progress": (
        "progress : bool, default True\n    A tqdm progress bar while requests are in flight."
    ),
    "max_connection_failures": (
        "max_connection_failures : int, default 5\n"
        "    Connection failures or timeouts in a row after which the whole job stops (a circuit\n"
        "    breaker: the URL is wrong or the server is down); one 401, 403 or 404 stops it at\n"
        "    once. The method running the job (``run``, ``grade_many``, ``rank_many``) then\n"
        "    raises :class:`~ragnb.errors.JudgeUnavailable` naming the URL and the cause; every\n"
        "    answer received before is cached and in the ledger."
    ),
    "health_check": (
        "health_check : callable, optional\n"
        "    Called after a connection failure; returns why the server cannot answer, or None. A\n"
        "    reason stops the job at once with that reason in the error: a client of a local\n"
        "    model passes :meth:`ragnb.llm.server.LocalLLMServer.failure` (see\n"
        "    :meth:`~ragnb.llm.server.LocalLLMServer.client_options`), so a server that crashed\n"
        "    is called a crash (with its signal and the end of its log), not a run of connection\n"
        "    failures."
    ),
}
#: Decorator expanding :data:`CLIENT_ENTRIES`.
fill_client_doc = doc_filler(CLIENT_ENTRIES)


class CallOptions(TypedDict):
    """What a caller adds to one call of :meth:`ChatClient.make_call` (its keywords): ``params``
    join the call's cache key, ``body`` its request (a judge's options:
    :meth:`ragnb.judge.OpenAIJudge.call_options`)."""

    params: dict[str, Any]
    body: dict[str, Any]


class ClientSettings(TypedDict, total=False):
    """The keyword settings of :class:`ChatClient` that a class built on it takes as
    ``**settings`` and passes on unchanged (:class:`ragnb.judge.OpenAIJudge`); each is
    described in :data:`CLIENT_ENTRIES`, with its default in :class:`ChatClient`."""

    base_url: str | None
    api_key: str | None
    temperature: float | None
    request_params: Mapping[str, Any] | None
    concurrency: int
    rpm: float | None
    tpm: float | None
    retry: RetryPolicy
    batch: bool
    batch_poll_s: float
    max_connection_failures: int
    health_check: Callable[[], str | None] | None
    reminder: bool
    retry_invalid: bool
    cache: Cache | None
    cache_dir: str | os.PathLike[str] | None
    ledger: Ledger | None
    stage: str
    progress: bool


@fill_client_doc
class ChatClient:
    """Chat calls to an OpenAI-compatible endpoint through the cache, the ledger and retries.

    Parameters
    ----------
    model : str
        The chat model's name, as the server knows it.
    {{base_url, api_key, temperature, request_params, concurrency, rpm, retry}}
    {{batch, batch_poll_s}}
    {{max_connection_failures, health_check}}
    {{reminder, retry_invalid, cache, ledger}}
    stage : str, default "llm"
        Ledger label when a call gives none.
    {{progress}}
    client_id : str, optional
        Written on every ledger line (column ``judge_id``); default ``"chat:<model>"``.
    options : dict, optional
        Options of the caller behind the request fields its calls carry (``{"constrained":
        "json_schema", "logprobs": 5}``), named in the error when a server rejects them.

    Raises
    ------
    InputError
        On an empty model, a concurrency below 1 (other than ``"server"``), an ``rpm`` or
        ``tpm`` that is not a number > 0, a ``batch_poll_s`` below 0, a reserved or non-JSON
        request parameter.

    Attributes
    ----------
    params : dict
        What besides model and prompt changes an answer (part of every call's cache key).

    Examples
    --------
    >>> from ragnb.llm import ChatClient, load_prompt
    >>> client = ChatClient("gpt-4o-mini", base_url="http://127.0.0.1:8000/v1")  # doctest: +SKIP
    >>> call = client.make_call(load_prompt("query-rewrite"), {"query": "hi! bm25?"}, item="q0")
    ... # doctest: +SKIP
    >>> client.run([call], stage="s1_rewrite", kind="extract")[0].value  # doctest: +SKIP
    ('what is BM25',)
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float | None = 0.0,
        request_params: Mapping[str, Any] | None = None,
        concurrency: int | str = 8,
        rpm: float | None = None,
        tpm: float | None = None,
        retry: RetryPolicy = DEFAULT_RETRY,
        batch: bool = False,
        batch_poll_s: float = 30.0,
        max_connection_failures: int = 5,
        health_check: Callable[[], str | None] | None = None,
        reminder: bool = True,
        retry_invalid: bool = False,
        cache: Cache | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        ledger: Ledger | None = None,
        stage: str = "llm",
        progress: bool = True,
        client_id: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise InputError(f"model must be a non-empty string, got {model!r}")
        if not isinstance(retry, RetryPolicy):
            raise InputError(f"retry must be a ragnb.llm.transport.RetryPolicy, got {retry!r}")
        counts = {} if concurrency == SERVER_CONCURRENCY else {"concurrency": concurrency}
        check_retry_settings(counts, {"batch_poll_s": batch_poll_s})
        params = check_request_params(request_params, ("model", "messages", "stream", "n"))
        self.model = model
        self.client_id = client_id or f"chat:{model}"
        self.base_url = base_url
        self.temperature = temperature
        self.request_params = params
        self.concurrency = concurrency
        self.retry = retry
        self.batch = bool(batch)
        self.batch_poll_s = float(batch_poll_s)
        self.reminder = reminder
        self.retry_invalid = retry_invalid
        self.cache = cache if cache is not None else Cache(cache_dir)
        self.cache.register_schema(NAMESPACE, KEY_PARTS)
        self.cache.register_schema(INFLIGHT_NAMESPACE, KEY_PARTS)
        self.ledger = ledger if ledger is not None else Ledger()
        self.stage = stage
        body = dict(params)
        if temperature is not None:
            body["temperature"] = temperature
        self.sender = CallSender(
            model=model,
            client_id=self.client_id,
            base_url=base_url,
            api_key=api_key,
            body=body,
            policy=retry,
            concurrency=concurrency,
            reminder=reminder,
            retry_invalid=retry_invalid,
            cache=self.cache,
            ledger=self.ledger,
            stage=stage,
            progress=progress,
            max_connection_failures=max_connection_failures,
            options=options,
            health_check=health_check,
            rpm=rpm,
            tpm=tpm,
            batch=self.batch,
            batch_poll_s=self.batch_poll_s,
        )

    @property
    def progress(self) -> bool:
        """A tqdm progress bar while requests are in flight; settable (a stage that draws a
        bar of its own turns the client's off)."""
        return bool(self.sender.progress)

    @progress.setter
    def progress(self, on: bool) -> None:
        self.sender.progress = bool(on)

    @property
    def params(self) -> dict[str, Any]:
        """What besides model and prompt changes an answer: ``temperature``,
        ``request_params`` and ``reminder`` (part of every call's cache key)."""
        return {
            "temperature": self.temperature,
            "request_params": self.request_params,
            "reminder": self.reminder,
        }

    def describe(self) -> dict[str, Any]:
        """The client's settings for manifests: no API key, the base URL without credentials.

        Returns
        -------
        dict
            ``model``, ``base_url``, ``params``, ``concurrency``, ``rpm`` and ``tpm`` (the
            endpoint's budgets per minute, None when unlimited), ``timeout_s`` (seconds),
            ``max_attempts``, ``batch`` (calls sent through the batch API) and
            ``batch_poll_s`` (seconds), ``cache`` (its folder), ``ledger`` (its file or None).
        """
        return {
            "model": self.model,
            "base_url": safe_url(self.base_url),
            "params": self.params,
            "concurrency": self.concurrency,
            **self.sender.limiter.describe(),
            "timeout_s": float(self.retry.timeout),
            "max_attempts": self.retry.max_attempts,
            "batch": self.batch,
            "batch_poll_s": self.batch_poll_s,
            "cache": str(self.cache.path),
            "ledger": None if self.ledger.path is None else str(self.ledger.path),
        }

    def make_call(
        self,
        template: PromptTemplate,
        values: Mapping[str, str],
        *,
        item: str,
        query_id: str = "",
        labels: Sequence[str] | None = None,
        params: Mapping[str, Any] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> LLMCall:
        """Render ``template`` with ``values`` into a call with its cache key.

        Parameters
        ----------
        template : PromptTemplate
        values : mapping of str to str
            The template's fields.
        item : str
            What the call is about (``"q1/d7"``), named in errors and ledger lines.
        query_id : str, default ""
        labels : sequence of str, optional
            The labels of a listwise answer (``A``, ``B``, ...).
        params : mapping, optional
            Parameters of this call besides the client's :attr:`params` (JSON values), added
            to its cache key; they must name every option that ``body`` carries.
        body : mapping, optional
            Fields this call adds to the request body (``response_format``, ``logprobs``, ...).

        Returns
        -------
        LLMCall
            Its key is the SHA-256 of (model, template hash, rendered prompt hash, the client's
            parameters updated with ``params``) (:func:`ragnb.llm.calls.build_call`).

        Raises
        ------
        InputError
            When a field of the template is missing from ``values`` (naming ``item``).
        """
        return build_call(
            self.model,
            {**self.params, **(params or {})},
            template,
            values,
            item=item,
            query_id=query_id,
            labels=labels,
            body=body,
        )

    def plan_calls(self, calls: Sequence[LLMCall], stage: str | None = None) -> list[PlannedCall]:
        """:class:`~ragnb.llm.ledger.PlannedCall` rows for ``calls`` (what
        :func:`ragnb.llm.ledger.estimate` prices): one per distinct prompt (a prompt repeated in a
        job is sent once), flagged when its answer is cached."""
        unique: dict[str, LLMCall] = {}
        for c in calls:
            unique.setdefault(c.key, c)
        found = self.sender.cached(list(unique.values()))
        return [
            PlannedCall(
                c.item,
                c.query_id,
                self.model,
                stage or self.stage,
                c.messages,
                c.template.expected_output_tokens,
                c.key in found,
                c.template.id,
                c.template.static_prefix(),
            )
            for c in unique.values()
        ]

    def cached(self, calls: Sequence[LLMCall]) -> dict[str, CallResult]:
        """The results of ``calls`` already in the cache, by call key; nothing is sent.

        Parameters
        ----------
        calls : sequence of LLMCall

        Returns
        -------
        dict of str to CallResult
            Only the calls whose answer is cached; an invalid answer counts unless the client
            re-sends invalid answers (``retry_invalid``). A call never answered is absent.
        """
        return self.sender.cached(calls)

    def run(
        self, calls: Sequence[LLMCall], *, stage: str | None = None, kind: str = "grade"
    ) -> list[CallResult]:
        """Send ``calls`` (from the cache where possible); one result per call, same order.

        Calls with the same key are sent once and share the result. A failed call has
        ``status="failed"`` and the reason (see :meth:`ragnb.llm.sender.CallSender.run`).

        Parameters
        ----------
        calls : sequence of LLMCall
        stage : str, optional
            Ledger label (default the client's ``stage``).
        kind : {"grade", "rank", "extract", "generate"}, default "grade"
            Written on the ledger lines.

        Raises
        ------
        JudgeUnavailable
            When the circuit breaker stopped the job (see ``max_connection_failures``).
        """
        return self.sender.run(calls, stage=stage, kind=kind)
