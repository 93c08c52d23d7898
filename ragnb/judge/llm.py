"""The LLM judge: :class:`OpenAIJudge`, any OpenAI-compatible chat endpoint as a judge.

The judge grades and ranks on a :class:`~ragnb.llm.ChatClient` (``judge.client``), which owns
the rest:

- **building calls**: a grading prompt template (:mod:`ragnb.llm.prompts`) is rendered into an
  :class:`~ragnb.llm.calls.LLMCall` whose cache key is the SHA-256 of (model, template hash,
  rendered prompt hash, parameters: temperature, extra request parameters, whether reminders
  are sent, and the judge options the call carries); neither the API key nor the base URL is
  part of it;
- **sending them** (the client): the cache first, then bounded concurrency through the one HTTP
  transport (:mod:`ragnb.llm.transport`), one reminder of the answer format after an invalid
  answer, every HTTP request in the cost ledger (:class:`~ragnb.llm.ledger.Ledger`);
- **reading answers** (here): strict parsing by the template (an invalid answer is never
  coerced) into :class:`~ragnb.judge.GradeResult` and :class:`~ragnb.judge.RankResult` rows.

Two options get more out of a small model, both off by default (servers lack them):
``constrained`` sends a JSON schema admitting only the template's answers (grade and rank
calls), and ``logprobs`` asks grade calls for token log-probabilities, from which each result
gets an ``expected_grade`` beside the sampled ``grade`` (:func:`ragnb.llm.calls.expected_grade`).
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any, Unpack

from ragnb.errors import InputError
from ragnb.judge.base import (
    GradeRequest,
    GradeResult,
    Judge,
    RankRequest,
    RankResult,
    check_sample,
    grade_requests,
    rank_requests,
)
from ragnb.llm.calls import CONSTRAINED, CallResult, LLMCall, response_format
from ragnb.llm.client import CallOptions, ChatClient, ClientSettings, fill_client_doc
from ragnb.llm.ledger import PlannedCall
from ragnb.llm.prompts import LABELS, PromptTemplate, load_prompt

__all__ = ["DEFAULT_JUDGE_MODEL", "OpenAIJudge"]

#: The hosted chat model of an :class:`OpenAIJudge` (and of the studies' ``openai`` judges and
#: LLM rewriters) unless one is named.
DEFAULT_JUDGE_MODEL = "gpt-4o-mini"


@fill_client_doc
class OpenAIJudge(Judge):
    """A judge behind any OpenAI-compatible chat completions endpoint.

    Parameters
    ----------
    model : str, default "gpt-4o-mini"
    prompt : str, PathLike or PromptTemplate, default "utility-rubric"
        The grading prompt: a shipped name (see :func:`ragnb.llm.available_prompts`) or the
        path of a YAML template file.
    rank_prompt : str, PathLike or PromptTemplate, default "listwise"
        The listwise prompt used by :meth:`rank`.
    language : str, default "en"
        Language of shipped prompts (``"en"``, ``"fr"``).
    constrained : {None, "json_schema", "json_object_schema"}, default None
        Constrained output: each grade and rank call sends a JSON schema admitting only its
        template's answers (:meth:`~ragnb.llm.PromptTemplate.response_schema`: the grade
        scale, or the batch's labels), as ``response_format``. ``"json_schema"`` is OpenAI's
        Structured Outputs form (its root must be an object: not for ``integer`` prompts);
        ``"json_object_schema"`` is llama.cpp's (``{"type": "json_object", "schema": ...}``,
        which ``llama-server`` and llama-cpp-python's server take; the latter answers OpenAI's
        form with HTTP 500). Answers still go through the strict parser. Other calls
        (``extract``, ``generate``) are sent as without it.
    logprobs : int, default 0
        When > 0, grade calls ask for token log-probabilities (``logprobs=true``,
        ``top_logprobs=logprobs``, 1 to 20; ``True`` means 10) and each result gets
        ``expected_grade`` = sum_g g p(g) / sum_g p(g) over the scale's grade tokens at the
        position of the sampled grade [3]_ [4]_ (NaN when the server returns none, or the
        scale has grades outside 0-9).

    Other Parameters
    ----------------
    **settings
        The settings of the judge's :class:`~ragnb.llm.ChatClient` (typed by
        ``ClientSettings``), passed on unchanged:
    {{base_url, api_key, temperature, request_params, concurrency, rpm, retry, reminder}}
    {{retry_invalid, cache, ledger}}
    {{batch, batch_poll_s}}
    stage : str, default "judge"
        Ledger label when a call gives none.
    {{progress}}
    {{max_connection_failures, health_check}}

    Notes
    -----
    A server that answers an error naming a field of these options (``response_format``,
    ``logprobs``) stops the job with :class:`~ragnb.errors.JudgeUnavailable` saying which option
    to turn off; nothing falls back silently. Each option is part of the cache key of the calls
    that carry it, and of :meth:`describe`.

    The ``passage`` of each item fills the grading template's item field (``{passage}``, or
    ``{response}`` for ``primer-response``); other text columns of the items (``answer``,
    ``reference``, ...) fill the fields of the same name.

    Attributes
    ----------
    judge_id : str
        ``"openai-judge:<model>"``.
    client : ChatClient
        Sends the calls (its ``client_id`` is the ``judge_id``); the query rewriter, the query
        generator and the other LLM uses of a study may share it (the same cache and ledger).
    prompt, rank_prompt : PromptTemplate
    scale : (int, int)
        The grading prompt's scale.

    Examples
    --------
    >>> judge = OpenAIJudge("gpt-4o-mini", base_url="http://127.0.0.1:8000/v1")  # doctest: +SKIP
    >>> judge.grade("what is BM25?", ["BM25 is a ranking function ..."])[0].grade  # doctest: +SKIP
    5

    References
    ----------
    .. [1] Dallaire (arXiv 2511.09545), section 3.4: S4 Score (1-5 utility grades) and S6 Rank
       (listwise orders of five passages A-E), with caching and manifests.
    .. [2] Bergum, "Improving retrieval with LLM-as-a-judge" (Vespa blog).
    .. [3] Zhuang et al., "Beyond Yes and No: Improving Zero-Shot LLM Rankers via Scoring
       Fine-Grained Relevance Labels", NAACL 2024: expected relevance from the rating labels'
       probabilities.
    .. [4] Liu et al., "G-Eval: NLG Evaluation using GPT-4 with Better Human Alignment", EMNLP
       2023: the score weighted by the score tokens' probabilities.
    """

    def __init__(
        self,
        model: str = DEFAULT_JUDGE_MODEL,
        *,
        prompt: str | os.PathLike[str] | PromptTemplate = "utility-rubric",
        rank_prompt: str | os.PathLike[str] | PromptTemplate = "listwise",
        language: str = "en",
        constrained: str | None = None,
        logprobs: int = 0,
        **settings: Unpack[ClientSettings],
    ) -> None:
        constrained, logprobs = _check_options(
            constrained, logprobs, settings.get("request_params")
        )
        settings.setdefault("stage", "judge")
        self.client = ChatClient(
            model,
            **settings,
            client_id=f"openai-judge:{model}",
            options={"constrained": constrained, "logprobs": logprobs},
        )
        self.model = model
        self.language = language
        self.prompt = load_prompt(prompt, language)
        self.rank_prompt = load_prompt(rank_prompt, language)
        if self.prompt.kind != "grade":
            raise InputError(f"prompt {self.prompt.id} is a {self.prompt.kind} prompt, not grade")
        if self.rank_prompt.kind != "rank":
            raise InputError(f"rank_prompt {self.rank_prompt.id} is not a rank prompt")
        self.scale = self.prompt.scale
        self.constrained = constrained
        self.logprobs = logprobs
        self._check_prompt(self.prompt)
        self.base_url = settings.get("base_url")
        self.sample = 0
        self.sample_temperature: float | None = None
        self.cache = self.client.cache
        self.ledger = self.client.ledger
        self.stage = self.client.stage
        self.judge_id = self.client.client_id

    # -- identity

    @property
    def params(self) -> dict[str, Any]:
        """What besides model and prompt changes an answer (part of cache keys): the options
        ``constrained`` and ``logprobs`` only when on (and in a call's key only when the call
        carries them), so answers cached without them stay valid; the temperature and the
        ``sample`` index of a judge drawn by :meth:`with_sample` (the index only from 1 on, so
        sample 0 answers from the cache of the judge at that temperature)."""
        out = self.client.params
        if self.sample_temperature is not None:
            out["temperature"] = self.sample_temperature
        if self.sample:
            out["sample"] = self.sample
        if self.constrained is not None:
            out["constrained"] = self.constrained
        if self.logprobs:
            out["logprobs"] = self.logprobs
        return out

    def describe(self) -> dict[str, Any]:
        client = self.client.describe()
        return {
            "judge_id": self.judge_id,
            "class": type(self).__name__,
            "model": self.model,
            "base_url": client["base_url"],
            "scale": list(self.scale) if self.scale else None,
            "prompt": self.prompt.describe(),
            "rank_prompt": self.rank_prompt.describe(),
            "params": self.params,
            "constrained": self.constrained,
            "logprobs": self.logprobs,
            "concurrency": client["concurrency"],
            "rpm": client["rpm"],
            "tpm": client["tpm"],
            "timeout_s": client["timeout_s"],
            "max_attempts": client["max_attempts"],
            "batch": client["batch"],
            "batch_poll_s": client["batch_poll_s"],
            "cache": client["cache"],
            "ledger": client["ledger"],
        }

    def with_prompt(
        self,
        prompt: str | os.PathLike[str] | PromptTemplate | None = None,
        rank_prompt: str | os.PathLike[str] | PromptTemplate | None = None,
        language: str | None = None,
    ) -> OpenAIJudge:
        """A copy with other prompts, sharing client settings, cache and ledger.

        ``language`` applies to the prompts given here by shipped name; a prompt not given is
        kept as it is.
        """
        other = copy.copy(self)
        lang = language or self.language
        if prompt is not None:
            other.prompt = load_prompt(prompt, lang)
            if other.prompt.kind != "grade":
                raise InputError(f"prompt {other.prompt.id} is not a grade prompt")
            self._check_prompt(other.prompt)
            other.scale = other.prompt.scale
        if rank_prompt is not None:
            other.rank_prompt = load_prompt(rank_prompt, lang)
            if other.rank_prompt.kind != "rank":
                raise InputError(f"rank_prompt {other.rank_prompt.id} is not a rank prompt")
        return other

    def with_sample(self, sample: int, temperature: float | None = None) -> OpenAIJudge:
        """A copy drawing the ``sample``-th answer to every call, at ``temperature``.

        Each sample is its own cache entry: a call's key holds ``sample`` from 1 on (sample 0
        keeps the key of the judge at that temperature, so answers it cached before still
        serve) and the temperature sent. The copy shares the client, its cache and ledger.

        Parameters
        ----------
        sample : int >= 0
        temperature : float > 0, optional
            Sent as the request's ``temperature`` (None: the judge's own ``temperature``).

        Returns
        -------
        OpenAIJudge

        Raises
        ------
        InputError
            ``sample`` not an integer >= 0, ``temperature`` not a number > 0.

        References
        ----------
        .. [1] X. Wang et al., "Self-Consistency Improves Chain of Thought Reasoning in Language
           Models", ICLR 2023: several answers sampled at a temperature above 0, then a vote.
        """
        sample, temperature = check_sample(sample, temperature)
        other = copy.copy(self)
        other.sample = sample
        other.sample_temperature = temperature
        return other

    # -- building calls

    def call_options(
        self, template: PromptTemplate, labels: Sequence[str] | None = None
    ) -> CallOptions:
        """The judge's options for a call of ``template``, as the keywords of
        :meth:`ragnb.llm.ChatClient.make_call`: ``{"params": ..., "body": ...}``.

        A judge's call is its client's call (``judge.client.make_call(template, values,
        item=..., **judge.call_options(template, labels))``) carrying the judge's options that
        apply to it: ``response_format`` when ``constrained`` is on and the template's answer has
        a schema (:meth:`~ragnb.llm.PromptTemplate.response_schema`), ``logprobs`` for grade
        templates; its key holds exactly those; a judge drawn by :meth:`with_sample` adds its
        temperature (to the key and the body) and its sample index (to the key).

        Parameters
        ----------
        template : PromptTemplate
        labels : sequence of str, optional
            The labels of a listwise answer (``A``, ``B``, ...).

        Returns
        -------
        CallOptions
            ``params`` (added to the call's cache key) and ``body`` (added to its request).

        Raises
        ------
        InputError
            ``constrained="json_schema"`` meets an ``integer`` answer.
        """
        params: dict[str, Any] = {}
        body: dict[str, Any] = {}
        schema = template.response_schema(labels) if self.constrained else None
        if schema is not None and self.constrained is not None:
            self._check_prompt(template)
            params["constrained"] = self.constrained
            body["response_format"] = response_format(
                self.constrained, schema, f"ragnb_{template.answer}"
            )
        if self.logprobs and template.kind == "grade":
            params["logprobs"] = self.logprobs
            body.update(logprobs=True, top_logprobs=self.logprobs)
        if self.sample_temperature is not None:
            params["temperature"] = self.sample_temperature
            body["temperature"] = self.sample_temperature
        if self.sample:
            params["sample"] = self.sample
        return CallOptions(params=params, body=body)

    def _check_prompt(self, template: PromptTemplate) -> None:
        """Refuse a template the options cannot serve (before any call)."""
        if self.constrained == "json_schema" and template.answer == "integer":
            raise InputError(
                f"prompt {template.id} answers a bare integer, which OpenAI's json_schema "
                "cannot constrain (its root must be an object): use a json_grade prompt, "
                "constrained='json_object_schema' (a llama.cpp server) or constrained=None"
            )
        if self.logprobs and template.kind == "grade" and template.scale is not None:
            lo, hi = template.scale
            if lo < 0 or hi > 9:
                raise InputError(
                    f"prompt {template.id}: an expected grade needs single-digit grades (0-9), "
                    f"the scale is {lo}-{hi}; set logprobs=0"
                )

    def _grade_calls(self, requests: list[GradeRequest]) -> list[LLMCall]:
        tpl = self.prompt
        calls = []
        for r in requests:
            values = dict(r.fields)
            if r.query is not None:
                values["query"] = r.query
            if r.passage is not None:
                values[tpl.item_field] = r.passage
            calls.append(
                self.client.make_call(
                    tpl, values, item=r.item, query_id=r.query_id, **self.call_options(tpl)
                )
            )
        return calls

    def _rank_calls(self, requests: list[RankRequest]) -> list[LLMCall]:
        tpl = self.rank_prompt
        calls = []
        for r in requests:
            if r.query is None or r.passages is None:
                raise InputError(
                    f"batch {r.item}: ranking with an LLM needs 'query' and 'passages'",
                    query_id=r.query_id,
                )
            values = tpl.rank_fields(r.query, r.passages)
            labels = LABELS[: len(r.passages)]
            options = self.call_options(tpl, labels)
            calls.append(
                self.client.make_call(
                    tpl, values, item=r.item, query_id=r.query_id, labels=labels, **options
                )
            )
        return calls

    def plan(self, items: Any, *, kind: str = "grade", stage: str | None = None) -> list[Any]:
        """The calls :meth:`grade_many` (``kind="grade"``) or :meth:`rank_many` would make, with
        whether each is cached: what :func:`ragnb.llm.ledger.estimate` prices."""
        if kind == "grade":
            calls = self._grade_calls(grade_requests(items))
        elif kind == "rank":
            calls = self._rank_calls(rank_requests(items))
        else:
            raise InputError(f"kind must be 'grade' or 'rank', got {kind!r}")
        return self.plan_calls(calls, stage)

    def plan_calls(self, calls: Sequence[LLMCall], stage: str | None = None) -> list[PlannedCall]:
        """:class:`~ragnb.llm.ledger.PlannedCall` rows for ``calls``
        (:meth:`ragnb.llm.ChatClient.plan_calls`)."""
        return self.client.plan_calls(calls, stage)

    # -- the verbs

    def _grade_batch(self, requests: list[GradeRequest], stage: str | None) -> list[GradeResult]:
        calls = self._grade_calls(requests)
        results = self.run(calls, stage=stage, kind="grade")
        return [
            self._grade_result(
                r,
                c.value if c.valid else None,
                prompt=self.prompt.id,
                expected_grade=math.nan if c.expected_grade is None else c.expected_grade,
                **c.audit(),
            )
            for r, c in zip(requests, results, strict=True)
        ]

    def _rank_batch(self, requests: list[RankRequest], stage: str | None) -> list[RankResult]:
        calls = self._rank_calls(requests)
        results = self.run(calls, stage=stage, kind="rank")
        return [
            self._rank_result(
                r, c.value if c.valid else None, prompt=self.rank_prompt.id, **c.audit()
            )
            for r, c in zip(requests, results, strict=True)
        ]

    # -- sending (the engine is the client)

    def run(
        self, calls: Sequence[LLMCall], *, stage: str | None = None, kind: str = "grade"
    ) -> list[CallResult]:
        """Send ``calls`` through the judge's client (:meth:`ragnb.llm.ChatClient.run`)."""
        return self.client.run(calls, stage=stage, kind=kind)


def _check_options(
    constrained: Any, logprobs: Any, request_params: Mapping[str, Any] | None
) -> tuple[str | None, int]:
    """``(constrained, logprobs)`` validated; ``logprobs=True`` means 10, False means 0."""
    if constrained not in CONSTRAINED:
        raise InputError(f"constrained must be one of {CONSTRAINED}, got {constrained!r}")
    if logprobs is True:
        logprobs = 10
    elif logprobs is False or logprobs is None:
        logprobs = 0
    if type(logprobs) is not int or not 0 <= logprobs <= 20:
        raise InputError(f"logprobs must be an integer in [0, 20] (top_logprobs), got {logprobs!r}")
    given = set(request_params or {})
    for option, on, fields in (
        ("constrained", constrained is not None, {"response_format"}),
        ("logprobs", logprobs > 0, {"logprobs", "top_logprobs"}),
    ):
        if on and given & fields:
            raise InputError(
                f"request_params sets {sorted(given & fields)} and {option} sets it too: "
                "give one of them"
            )
    return constrained, logprobs
