"""A search agent over a corpus, traced with OpenTelemetry: search, read, stop or search again.

For each question, :class:`SearchAgent` searches with the question, optionally reranks, shows
the model the top passages and the searches made so far, and reads its decision, a JSON object
``{"action": "stop" | "search", "query": "..."}`` (the shipped ``agent-step`` prompt, its answer
constrained to that schema): stop, or search again with the query it wrote. The loop makes
between :attr:`AgentConfig.min_calls` and :attr:`AgentConfig.max_calls` searches (2 and 4 by
default): a stop before the minimum is overruled, and no model call follows the last search.

A small model writes odd queries. The model's query is replaced by a rewrite of the question
(:func:`fallback_query`) when it is empty, repeats a search already made, or when the answer was
invalid or failed (the reason is on the span, ``ragnb.agent.fallback``).

Every step is a span of one trace per question (:mod:`ragnb.studies.agentic.telemetry`), written
as OTLP JSON lines by the OpenTelemetry SDK:

=================================== =========================================================
span (kind)                         attributes
=================================== =========================================================
``invoke_agent {name}`` (INTERNAL)  ``gen_ai.operation.name="invoke_agent"``,
                                    ``gen_ai.agent.name``, ``gen_ai.provider.name``,
                                    ``gen_ai.request.model``, ``gen_ai.input.messages`` (the
                                    question), ``ragnb.agent.calls``
``retrieval {source}`` (CLIENT)     ``gen_ai.operation.name="retrieval"``,
                                    ``gen_ai.data_source.id`` (the retriever, ``bm25``),
                                    ``gen_ai.provider.name="ragnb"``, ``gen_ai.request.top_k``,
                                    ``gen_ai.retrieval.query.text``,
                                    ``gen_ai.retrieval.documents`` (JSON text of ``[{"id",
                                    "score"}]``), ``ragnb.agent.call`` (1, 2, ...),
                                    ``ragnb.agent.query_source`` (``question``, ``model``,
                                    ``fallback``); with ``openinference``, also
                                    ``openinference.span.kind="RETRIEVER"``, ``input.value``
                                    and ``retrieval.documents.{i}.document.id/.score``
``rerank {reranker}`` (INTERNAL)    OpenInference: ``openinference.span.kind="RERANKER"``,
                                    ``reranker.query``, ``reranker.model_name``,
                                    ``reranker.top_k``,
                                    ``reranker.input_documents.{i}.document.id/.score``,
                                    ``reranker.output_documents.{i}.document.id/.score``
``chat {model}`` (CLIENT)           ``gen_ai.operation.name="chat"``,
                                    ``gen_ai.provider.name``, ``gen_ai.request.model``,
                                    ``gen_ai.usage.input_tokens``/``output_tokens`` (the
                                    server's usage), ``gen_ai.output.type="json"``,
                                    ``ragnb.agent.decision``, ``ragnb.agent.next_query``,
                                    ``ragnb.agent.fallback``, ``ragnb.agent.answer_status``
=================================== =========================================================

Every span of a trace carries ``ragnb.query.id`` (the question's id, the one its qrels use) and,
for a turn of a conversation, ``gen_ai.conversation.id`` and ``ragnb.conversation.turn``.

References
----------
.. [1] Yao et al., "ReAct: Synergizing Reasoning and Acting in Language Models", ICLR 2023,
   Section 3 (act, observe, act again: ``search[query]`` or ``finish``).
.. [2] OpenTelemetry semantic conventions v1.41.1, ``docs/gen-ai/gen-ai-spans.md`` and
   ``docs/gen-ai/gen-ai-agent-spans.md``.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pandas as pd

from ragnb.core.validation import check_int_at_least, check_positive_int
from ragnb.errors import InputError
from ragnb.io.traces import query_key
from ragnb.llm.calls import CONSTRAINED, response_format
from ragnb.llm.client import ChatClient
from ragnb.llm.prompts import PromptTemplate, load_prompt
from ragnb.rerank.base import Reranker
from ragnb.retrievers.retrieve import Retriever
from ragnb.rewrite.rules import denoise_query
from ragnb.studies.agentic import telemetry as tel

__all__ = [
    "QUERY_SOURCES",
    "AgentConfig",
    "AgentRun",
    "Decision",
    "Question",
    "SearchAgent",
    "Step",
    "Trajectory",
    "fallback_query",
]

#: Where a search query came from: the question itself, the model, or a rewrite of the question.
QUERY_SOURCES = ("question", "model", "fallback")
#: The ledger stage of the agent's model calls.
AGENT_STAGE = "agent"


@dataclass(frozen=True)
class Question:
    """One question the agent answers: one trace.

    Attributes
    ----------
    query_id : str
        Its id in the qrels (``<conversation>_<turn>`` for a turn of a conversation).
    text : str
    conversation_id : str, default ""
        The conversation it belongs to ("" for a question on its own).
    turn : int, default 0
        Its turn in the conversation, from 1 (0 for a question on its own).
    context : tuple of str, default ()
        The earlier turns' texts, oldest first.
    """

    query_id: str
    text: str
    conversation_id: str = ""
    turn: int = 0
    context: tuple[str, ...] = ()


@dataclass(frozen=True)
class AgentConfig:
    """The settings of the agent's loop.

    Attributes
    ----------
    top_k : int >= 1, default 10
        Documents each search returns (after reranking, when there is a reranker).
    rerank_depth : int >= top_k, default 30
        Documents a search hands the reranker (only with a reranker).
    read_k : int >= 1, default 3
        Passages the model reads after each search, best first.
    passage_chars : int >= 20, default 300
        Characters of each passage shown to the model (title, then text).
    min_calls, max_calls : int, default 2 and 4
        Searches per question at least and at most (1 <= min_calls <= max_calls).
    agent_name : str, default "ragnb-search-agent"
        ``gen_ai.agent.name``.
    prompt : str, default "agent-step"
        The step prompt: a shipped name or a YAML path, an ``act`` template with the
        ``json_action`` answer (fields ``question``, ``context``, ``queries``, ``passages``).
    max_tokens : int >= 1, default 96
        ``max_tokens`` of each model call.
    openinference : bool, default True
        Retrieval spans also carry OpenInference's ``RETRIEVER`` attributes, so
        :func:`ragnb.io.traces.read_traces` (and Phoenix) read them.
    seed : int, default 0
        Seed of the trace and span ids.

    Raises
    ------
    InputError
        On a value out of its range (naming it).
    """

    top_k: int = 10
    rerank_depth: int = 30
    read_k: int = 3
    passage_chars: int = 300
    min_calls: int = 2
    max_calls: int = 4
    agent_name: str = "ragnb-search-agent"
    prompt: str = "agent-step"
    max_tokens: int = 96
    openinference: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("top_k", "read_k", "min_calls", "max_tokens"):
            check_positive_int(getattr(self, name), name)
        check_int_at_least(self.rerank_depth, "rerank_depth", self.top_k)
        check_int_at_least(self.passage_chars, "passage_chars", 20)
        check_int_at_least(self.max_calls, "max_calls", self.min_calls)
        if not isinstance(self.agent_name, str) or not self.agent_name.strip():
            raise InputError(f"agent_name must be a non-empty name, got {self.agent_name!r}")

    def to_dict(self) -> dict[str, Any]:
        """The settings by name (JSON values)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Decision:
    """What the model's answer after a search made the loop do.

    Attributes
    ----------
    stop : bool
        The loop ends here.
    action : str
        The model's action (``"stop"``, ``"search"``), "" when its answer was invalid or failed.
    next_query : str
        The next search ("" when stopping).
    source : str
        ``"model"`` or ``"fallback"`` ("" when stopping).
    fallback : str
        Why the model's query was not used ("" when it was, or when stopping).
    status : str
        The call's status: ``"ok"``, ``"invalid"`` or ``"failed"``.
    input_tokens, output_tokens : int
        The call's usage.
    """

    stop: bool
    action: str
    next_query: str
    source: str
    fallback: str
    status: str
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Step:
    """One search of a trajectory, and the model's decision after it.

    Attributes
    ----------
    call : int
        1, 2, ...: the search's place in the trajectory.
    query : str
    source : str
        One of :data:`QUERY_SOURCES`.
    doc_ids : tuple of str
        What the search returned (reranked, when there is a reranker), best first.
    scores : tuple of float
        Their scores (the reranker's, when there is one).
    decision : Decision or None
        None after the last search allowed (no model call).
    """

    call: int
    query: str
    source: str
    doc_ids: tuple[str, ...]
    scores: tuple[float, ...]
    decision: Decision | None = None


@dataclass(frozen=True)
class Trajectory:
    """The searches the agent made for one question, and the trace that records them.

    Attributes
    ----------
    question : Question
    trace_id : str
        32 hexadecimal digits.
    steps : tuple of Step
    """

    question: Question
    trace_id: str
    steps: tuple[Step, ...]

    @property
    def calls(self) -> int:
        """Searches made."""
        return len(self.steps)

    @property
    def model_calls(self) -> int:
        """Model calls made (one after each search but the last allowed)."""
        return sum(1 for s in self.steps if s.decision is not None)


@dataclass(frozen=True)
class AgentRun:
    """What :meth:`SearchAgent.run` did: a trajectory per question and the trace file.

    Attributes
    ----------
    trajectories : tuple of Trajectory
        In the order asked.
    path : Path
        The OTLP JSON lines file (one line per question's trace).
    model : str
        The model that decided.
    lines, spans : int
        Lines and spans written.
    config : AgentConfig
    """

    trajectories: tuple[Trajectory, ...]
    path: Path
    model: str
    lines: int
    spans: int
    config: AgentConfig = field(default_factory=AgentConfig)

    def calls_per_question(self) -> dict[int, int]:
        """``{searches: questions}``, by number of searches."""
        return dict(sorted(Counter(t.calls for t in self.trajectories).items()))

    def steps(self) -> pd.DataFrame:
        """One row per search.

        Returns
        -------
        DataFrame
            ``query_id``, ``conversation_id``, ``turn``, ``trace_id``, ``call`` (1-based),
            ``query``, ``source``, ``doc_ids`` (list of str, best first), ``action`` (the
            model's, "" after the last search or an invalid answer), ``fallback``, ``status``
            ("" with no model call), ``input_tokens``, ``output_tokens``.
        """
        rows = []
        for t in self.trajectories:
            q = t.question
            for s in t.steps:
                d = s.decision
                rows.append(
                    {
                        "query_id": q.query_id,
                        "conversation_id": q.conversation_id,
                        "turn": q.turn,
                        "trace_id": t.trace_id,
                        "call": s.call,
                        "query": s.query,
                        "source": s.source,
                        "doc_ids": list(s.doc_ids),
                        "action": d.action if d else "",
                        "fallback": d.fallback if d else "",
                        "status": d.status if d else "",
                        "input_tokens": d.input_tokens if d else 0,
                        "output_tokens": d.output_tokens if d else 0,
                    }
                )
        return pd.DataFrame(rows, columns=_STEP_COLUMNS)


_STEP_COLUMNS = [
    "query_id",
    "conversation_id",
    "turn",
    "trace_id",
    "call",
    "query",
    "source",
    "doc_ids",
    "action",
    "fallback",
    "status",
    "input_tokens",
    "output_tokens",
]


def fallback_query(
    question: str,
    context: Sequence[str],
    asked: Sequence[str],
    titles: Sequence[str],
) -> str:
    """The search that replaces an unusable query of the model: the question rewritten.

    The question, followed by the previous turn of its conversation when there is one (the
    history-concatenation baseline of conversational search), normalised
    (:func:`ragnb.rewrite.rules.denoise_query`, ``"normalise"``), then the title of the best
    passage of the last search whose addition gives a query not yet searched (a step of
    pseudo-relevance feedback).

    Parameters
    ----------
    question : str
    context : sequence of str
        The conversation's earlier turns, oldest first (empty for a question on its own).
    asked : sequence of str
        The searches made so far (compared once normalised, :func:`ragnb.io.traces.query_key`).
    titles : sequence of str
        Titles of the last search's passages, best first.

    Returns
    -------
    str
        A query not in ``asked`` when one of these gives it; else the question normalised with
        every title.

    References
    ----------
    .. [1] Dalton, Xiong, Callan, "CAsT 2019: The Conversational Assistance Track Overview",
       TREC 2019: baselines that expand a turn with earlier utterances of its conversation.

    Examples
    --------
    >>> fallback_query("What does dumps do there?", ["JSON encoder."], [], ["json.dumps"])
    'what does dumps do there json encoder json.dumps'
    >>> fallback_query("Temporary files.", [], ["temporary files tempfile.mkdtemp"],
    ...                ["tempfile.mkdtemp", "tempfile.gettempdir"])
    'temporary files tempfile.gettempdir'
    """
    base = denoise_query(" ".join([question, *context[-1:]]))
    seen = {query_key(q) for q in asked}
    for title in titles:
        if title and query_key(f"{base} {title}") not in seen:
            return f"{base} {title}"
    if query_key(base) not in seen:
        return base
    return " ".join([base, *titles]).strip()


# ----------------------------------------------------------------------------- the agent


class SearchAgent:
    """A search agent whose model decides after each search whether to stop, traced.

    Parameters
    ----------
    retriever : Retriever
        Already indexed on ``corpus`` (:func:`ragnb.retrievers.retrieve.make_retriever`, then
        ``index``); its ``name`` is the retrieval spans' ``gen_ai.data_source.id``.
    corpus : DataFrame
        ``doc_id``, ``title``, ``text``: the passages the model reads (and the reranker
        scores).
    client : ChatClient
        The model's client (:meth:`ragnb.llm.server.LocalLLMServer.client_options` for the
        local model); its cache serves repeated steps.
    config : AgentConfig, optional
    reranker : Reranker, optional
        Reorders the first ``rerank_depth`` documents of each search, keeping ``top_k``
        (:func:`ragnb.rerank.make_reranker`); None: no reranking, no reranker span.
    provider : str, default "openai"
        ``gen_ai.provider.name`` of the model's spans (``"llama_cpp"`` for a llama.cpp server).
    constrained : {"json_object_schema", "json_schema", None}, default "json_object_schema"
        How the answer is constrained to the prompt's schema
        (:func:`ragnb.llm.calls.response_format`): llama-cpp-python's form, OpenAI's, or not.

    Raises
    ------
    InputError
        A prompt that is not an ``act`` template, a corpus without ``doc_id``, ``title`` and
        ``text``, or an unknown ``constrained``.
    """

    def __init__(
        self,
        retriever: Retriever,
        corpus: pd.DataFrame,
        client: ChatClient,
        *,
        config: AgentConfig | None = None,
        reranker: Reranker | None = None,
        provider: str = "openai",
        constrained: str | None = "json_object_schema",
    ) -> None:
        self.config = config or AgentConfig()
        self.template: PromptTemplate = load_prompt(self.config.prompt)
        if self.template.answer != "json_action":
            raise InputError(
                f"the agent's prompt {self.template.id} must be an act template with the "
                f"json_action answer, not {self.template.answer!r}"
            )
        if constrained not in CONSTRAINED:
            raise InputError(f"constrained must be one of {CONSTRAINED}, got {constrained!r}")
        missing = {"doc_id", "title", "text"} - set(corpus.columns)
        if missing:
            raise InputError(f"the corpus has no column(s) {sorted(missing)}")
        self.retriever, self.client, self.reranker = retriever, client, reranker
        self.provider, self.constrained = provider, constrained
        ids = corpus["doc_id"].astype(str)
        self._titles = dict(zip(ids, corpus["title"].fillna("").astype(str), strict=True))
        self._texts = dict(zip(ids, corpus["text"].fillna("").astype(str), strict=True))

    # -- the run

    def run(
        self,
        questions: Sequence[Question],
        path: str | os.PathLike[str],
        *,
        progress: bool = False,
        version: str = "",
    ) -> AgentRun:
        """Answer every question; write their traces to ``path`` (OTLP JSON lines), atomically.

        One search of the first question (and its reranking) runs before the first trace and is
        not recorded, so that loading and compiling do not count as a search's latency.

        Parameters
        ----------
        questions : sequence of Question
            Ids distinct.
        path : str or PathLike
            The trace file (replaced only once every question has its trace).
        progress : bool, default False
            A progress bar over the questions.
        version : str, default ""
            The instrumentation scope's version.

        Returns
        -------
        AgentRun

        Raises
        ------
        InputError
            No question, or a repeated query id.
        JudgeUnavailable
            When the model server stops answering (the file is then left as it was).
        """
        from tqdm.auto import tqdm

        from ragnb.io.files import atomic_write

        ids = [q.query_id for q in questions]
        if not ids or len(set(ids)) != len(ids):
            repeated = sorted(k for k, n in Counter(ids).items() if n > 1)
            raise InputError(f"the agent needs questions with distinct ids; repeated: {repeated}")
        path = Path(path)
        self._warm_up(questions[0].text)
        trajectories = []
        with atomic_write(path) as f, tel.tracing(f, seed=self.config.seed, version=version) as t:
            for q in tqdm(questions, desc="agent", unit="question", disable=not progress):
                trajectories.append(self.answer(q, t.tracer))
                t.flush()
        return AgentRun(
            tuple(trajectories),
            path,
            self.client.model,
            t.exporter.lines,
            t.exporter.spans,
            self.config,
        )

    def answer(self, question: Question, tracer: Any) -> Trajectory:
        """Search for one question until the model stops (within the bounds): one trace.

        Parameters
        ----------
        question : Question
        tracer : opentelemetry.trace.Tracer
            :attr:`ragnb.studies.agentic.telemetry.Tracing.tracer`.

        Returns
        -------
        Trajectory
        """
        cfg = self.config
        common = _common_attributes(question)
        root_attrs = {
            tel.OPERATION: "invoke_agent",
            tel.AGENT_NAME: cfg.agent_name,
            tel.PROVIDER: self.provider,
            tel.REQUEST_MODEL: self.client.model,
            tel.INPUT_MESSAGES: _user_message(question.text),
            **common,
        }
        trace = require_trace()
        name = f"invoke_agent {cfg.agent_name}"
        with tracer.start_as_current_span(
            name, kind=trace.SpanKind.INTERNAL, attributes=root_attrs
        ) as root:
            trace_id = format(root.get_span_context().trace_id, "032x")
            steps: list[Step] = []
            query, source = question.text, "question"
            for call in range(1, cfg.max_calls + 1):
                ranked = self._search(tracer, query, call, source, common)
                asked = [s.query for s in steps] + [query]
                decision = None
                if call < cfg.max_calls:
                    decision = self._decide(tracer, question, asked, ranked, call, common)
                steps.append(
                    Step(
                        call,
                        query,
                        source,
                        tuple(d for d, _ in ranked),
                        tuple(s for _, s in ranked),
                        decision,
                    )
                )
                if decision is None or decision.stop:
                    break
                query, source = decision.next_query, decision.source
            root.set_attribute(tel.CALLS, len(steps))
        return Trajectory(question, trace_id, tuple(steps))

    # -- the steps

    def _warm_up(self, text: str) -> None:
        """One search (and reranking) left out of the traces: a first call pays for loading
        and compiling, which is no part of a search's latency."""
        frame = pd.DataFrame({"query_id": ["q"], "text": [text]}, dtype=object)
        run = self.retriever.retrieve(frame, k=self.config.top_k)
        if self.reranker is not None and len(run):
            candidates = [(str(d), self._passage(str(d), 10_000)) for d in run["doc_id"]]
            self.reranker.rerank(text, candidates, self.config.top_k)

    def _search(
        self, tracer: Any, query: str, call: int, source: str, common: Mapping[str, Any]
    ) -> list[tuple[str, float]]:
        """One retrieval span (and a reranker span): ``(doc_id, score)`` best first."""
        cfg = self.config
        depth = cfg.rerank_depth if self.reranker is not None else cfg.top_k
        attrs = {
            tel.OPERATION: "retrieval",
            tel.DATA_SOURCE: self.retriever.name,
            tel.PROVIDER: "ragnb",
            tel.TOP_K: float(depth),
            tel.QUERY_TEXT: query,
            tel.CALL: call,
            tel.QUERY_SOURCE: source,
            **common,
        }
        trace = require_trace()
        name = f"retrieval {self.retriever.name}"
        with tracer.start_as_current_span(name, kind=trace.SpanKind.CLIENT, attributes=attrs) as sp:
            frame = pd.DataFrame({"query_id": ["q"], "text": [query]}, dtype=object)
            run = self.retriever.retrieve(frame, k=depth)
            ranked = [(str(d), float(s)) for d, s in zip(run["doc_id"], run["score"], strict=True)]
            sp.set_attribute(tel.DOCUMENTS, _documents_json(ranked))
            if cfg.openinference:
                sp.set_attributes({tel.OI_KIND: "RETRIEVER", tel.OI_INPUT: query})
                sp.set_attributes(_flat_documents(tel.OI_DOCUMENTS, ranked))
        if self.reranker is not None:
            return self._rerank(tracer, self.reranker, query, ranked, call, common)
        return ranked

    def _rerank(
        self,
        tracer: Any,
        reranker: Reranker,
        query: str,
        ranked: list[tuple[str, float]],
        call: int,
        common: Mapping[str, Any],
    ) -> list[tuple[str, float]]:
        """The reranker span, OpenInference's form: the top ``top_k`` reranked."""
        top_k = self.config.top_k
        attrs = {
            tel.OI_KIND: "RERANKER",
            tel.RERANK_QUERY: query,
            tel.RERANK_MODEL: reranker.name,
            tel.RERANK_TOP_K: top_k,
            tel.CALL: call,
            **common,
        }
        with tracer.start_as_current_span(f"rerank {reranker.name}", attributes=attrs) as sp:
            candidates = [(d, self._passage(d, 10_000)) for d, _ in ranked]
            out = reranker.rerank(query, candidates, top_k, scores=[s for _, s in ranked])
            out = [(str(d), float(s)) for d, s in out]
            sp.set_attributes(_flat_documents(tel.RERANK_INPUT, ranked))
            sp.set_attributes(_flat_documents(tel.RERANK_OUTPUT, out))
        return out

    def _decide(
        self,
        tracer: Any,
        question: Question,
        asked: list[str],
        ranked: list[tuple[str, float]],
        call: int,
        common: Mapping[str, Any],
    ) -> Decision:
        """The chat span: the model reads the top passages and stops or writes a query."""
        attrs = {
            tel.OPERATION: "chat",
            tel.PROVIDER: self.provider,
            tel.REQUEST_MODEL: self.client.model,
            tel.OUTPUT_TYPE: "json",
            tel.MAX_TOKENS: self.config.max_tokens,
            tel.CALL: call,
            **_server_attributes(self.client.base_url),
            **common,
        }
        if self.client.temperature is not None:
            attrs[tel.TEMPERATURE] = float(self.client.temperature)
        trace = require_trace()
        name = f"chat {self.client.model}"
        with tracer.start_as_current_span(name, kind=trace.SpanKind.CLIENT, attributes=attrs) as sp:
            result = self.client.run([self._call(question, asked, ranked)], stage=AGENT_STAGE)[0]
            sp.set_attributes(
                {
                    tel.INPUT_TOKENS: int(result.input_tokens),
                    tel.OUTPUT_TOKENS: int(result.output_tokens),
                    tel.ANSWER_STATUS: result.status,
                    tel.CACHED: bool(result.cached),
                }
            )
            if result.status == "failed":
                sp.set_status(trace.Status(trace.StatusCode.ERROR, result.reason or "failed"))
                sp.set_attribute(tel.ERROR_TYPE, "_OTHER")
            decision = self._policy(result, question, asked, ranked, call)
            sp.set_attributes(
                {
                    tel.DECISION: decision.action,
                    tel.NEXT_QUERY: decision.next_query,
                    tel.FALLBACK: decision.fallback,
                }
            )
        return decision

    def _policy(
        self,
        result: Any,
        question: Question,
        asked: list[str],
        ranked: list[tuple[str, float]],
        call: int,
    ) -> Decision:
        """What the loop does with the model's answer: stop, its query, or a fallback."""
        tokens = {
            "input_tokens": int(result.input_tokens),
            "output_tokens": int(result.output_tokens),
        }
        action, query = result.value if result.valid else ("", "")
        if action == "stop" and call >= self.config.min_calls:
            return Decision(True, action, "", "", "", result.status, **tokens)
        seen = {query_key(q) for q in asked}
        if not result.valid:
            why = f"{result.status} answer: {result.reason or result.status}"
        elif query and query_key(query) not in seen:
            return Decision(False, action, query, "model", "", result.status, **tokens)
        elif action == "stop":
            why = f"stop before {self.config.min_calls} searches"
        else:
            why = "query already searched" if query else "empty query"
        titles = [self._titles.get(d, "") or d for d, _ in ranked[: self.config.read_k]]
        nxt = fallback_query(question.text, question.context, asked, titles)
        return Decision(False, action, nxt, "fallback", why, result.status, **tokens)

    def _call(self, question: Question, asked: list[str], ranked: list[tuple[str, float]]) -> Any:
        """The step call: the prompt filled in, its answer constrained to the schema."""
        cfg = self.config
        passages = "\n".join(
            f"[{i}] {self._passage(d, cfg.passage_chars)}"
            for i, (d, _) in enumerate(ranked[: cfg.read_k], start=1)
        )
        context = ""
        if question.context:
            earlier = "\n".join(f"- {t}" for t in question.context)
            context = f"Earlier in this conversation:\n{earlier}\n\n"
        values = {
            "question": question.text,
            "context": context,
            "queries": "\n".join(f"{i}. {q}" for i, q in enumerate(asked, start=1)),
            "passages": passages or "(no passage found)",
        }
        params: dict[str, Any] = {"max_tokens": cfg.max_tokens}
        body: dict[str, Any] = {"max_tokens": cfg.max_tokens}
        schema = self.template.response_schema()
        if self.constrained is not None and schema is not None:
            params["constrained"] = self.constrained
            body["response_format"] = response_format(
                self.constrained, schema, f"ragnb_{self.template.answer}"
            )
        return self.client.make_call(
            self.template,
            values,
            item=f"{question.query_id}/{len(asked)}",
            query_id=question.query_id,
            params=params,
            body=body,
        )

    def _passage(self, doc_id: str, chars: int) -> str:
        """``title: text`` of a document, cut to ``chars`` characters."""
        title, text = self._titles.get(doc_id, ""), self._texts.get(doc_id, "")
        whole = f"{title}: {text}" if title else text
        return whole if len(whole) <= chars else whole[: chars - 3].rstrip() + "..."


# ----------------------------------------------------------------------------- attributes


def require_trace() -> Any:
    """The OpenTelemetry trace API (``SpanKind``, ``Status``), or MissingExtra."""
    from ragnb.core.lazylibs import require

    return require("opentelemetry.trace", "agents")


def _common_attributes(question: Question) -> dict[str, Any]:
    """What every span of a question's trace carries."""
    out: dict[str, Any] = {tel.QUERY_ID: question.query_id}
    if question.conversation_id:
        out[tel.CONVERSATION] = question.conversation_id
        out[tel.TURN] = question.turn
    return out


def _user_message(text: str) -> str:
    """``gen_ai.input.messages`` holding one user message, as JSON text."""
    message = {"role": "user", "parts": [{"type": "text", "content": text}]}
    return json.dumps([message], ensure_ascii=False)


def _documents_json(ranked: Sequence[tuple[str, float]]) -> str:
    """``gen_ai.retrieval.documents`` as JSON text: ``[{"id": ..., "score": ...}]``."""
    return json.dumps([{"id": d, "score": s} for d, s in ranked], ensure_ascii=False)


def _flat_documents(prefix: str, ranked: Sequence[tuple[str, float]]) -> dict[str, Any]:
    """OpenInference's flattened list: ``{prefix}.{i}.document.id`` and ``.score``."""
    out: dict[str, Any] = {}
    for i, (d, s) in enumerate(ranked):
        out[f"{prefix}.{i}.document.id"] = d
        out[f"{prefix}.{i}.document.score"] = s
    return out


def _server_attributes(base_url: str | None) -> dict[str, Any]:
    """``server.address`` and ``server.port`` of the model's endpoint (none when unknown)."""
    if not base_url:
        return {}
    parts = urlsplit(base_url)
    if not parts.hostname:
        return {}
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return {tel.SERVER_ADDRESS: parts.hostname, tel.SERVER_PORT: port}
