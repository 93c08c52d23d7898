"""The judge of a golden set: built from notebook 02's parameters, described for manifests and
banners without secrets.

Offline judges (:class:`~ragnb.judge.QrelsJudge`, :class:`~ragnb.judge.NoisyJudge`) read the
dataset's labels mapped onto the judge's scale; an LLM judge
(:class:`~ragnb.judge.OpenAIJudge`) reads its key from ``$OPENAI_API_KEY`` only. What is
written about a judge names its ``base_url`` only when it holds no credentials, and every string
is scrubbed of the keys in the environment (:func:`ragnb.core.provenance.scrub`).

``judge="local"`` starts a local model server (:class:`~ragnb.llm.server.LocalLLMServer`,
SmolLM2-135M-Instruct) once per pipeline, and an :class:`~ragnb.judge.OpenAIJudge` on it with
constrained output (llama.cpp's form) and token log-probabilities (the server returns
them: each grade gets its ``expected_grade``). The server stops when the judge is garbage
collected (:func:`stop_local_server` stops it at once), at interpreter exit, and with its parent
process even after a SIGKILL (Linux).
"""

from __future__ import annotations

import re
import weakref
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ragnb.core.provenance import public_url, scrub, utc_now, versions
from ragnb.errors import InputError
from ragnb.judge.base import Judge
from ragnb.llm.server import INSTALL_HINT
from ragnb.studies.golden.config import GoldenSetConfig

__all__ = [
    "LOCAL_JUDGE_WARNING",
    "LOCAL_MODEL_NAME",
    "failure_cause",
    "human_labels",
    "judge_banner",
    "make_judge",
    "missing_labels",
    "public_judge_info",
    "qrels_note",
    "stop_local_server",
]

#: How reports name the ``local`` judge's model.
LOCAL_MODEL_NAME = (
    "SmolLM2-135M-Instruct (Q4_1 GGUF served as float32, a 135M-parameter local stand-in, not a "
    "judge to trust)"
)
#: What a console says before the ``local`` judge starts.
LOCAL_JUDGE_WARNING = (
    f"judge 'local' is {LOCAL_MODEL_NAME}: it runs the real LLM path on this machine (HTTP, "
    "constrained output, the cache and the ledger), and its grades are what a 135M-parameter "
    "model does, not what LLM judging can do. For a golden set to rely on, use the openai "
    "judge with a capable model (any OpenAI-compatible server) and calibrate it against human "
    "labels."
)
_ATTEMPTS = re.compile(r" \(request \d+ of at most \d+\)$")
_NOT_SENT = "not sent: the job stopped after "

#: Token alternatives asked for per grade position by the ``local`` judge.
LOCAL_TOP_LOGPROBS = 20


def failure_cause(reasons: Sequence[str]) -> tuple[str, int]:
    """The most common reason among failed judgements, and how many share it.

    Retry counts and the "not sent" prefix of calls a stopped job never sent are left out, so
    one cause groups every failure it made.

    Examples
    --------
    >>> failure_cause(["HTTP 503: busy (request 5 of at most 5)", "HTTP 503: busy (request 2 "
    ...                "of at most 2)", "no answer within 60 s (request 5 of at most 5)"])
    ('HTTP 503: busy', 2)
    """
    counts = Counter(_ATTEMPTS.sub("", str(r)).removeprefix(_NOT_SENT) for r in reasons)
    if not counts:
        return "", 0
    return counts.most_common(1)[0]


def human_labels(config: GoldenSetConfig, qrels: pd.DataFrame) -> tuple[pd.DataFrame, Any]:
    """The dataset's labels mapped by ``config.grade_map``, and the map ``(name, dict)`` or
    None."""
    from ragnb.measures import map_grades, resolve_grade_map

    gm = resolve_grade_map(config.grade_map, qrels)
    labels = qrels[["query_id", "doc_id", "relevance"]].copy()
    if gm is not None:
        labels = map_grades(labels, gm[1])
    return labels, gm


def missing_labels(config: GoldenSetConfig, qrels: pd.DataFrame) -> str:
    """Why ``config.judge`` cannot grade this dataset (an offline judge on a dataset without
    labels), or ``""``."""
    if config.judge in ("noisy", "qrels") and qrels.empty:
        what = "simulates grades from" if config.judge == "noisy" else "copies"
        return (
            f"judge={config.judge!r} {what} the dataset's labels, and this dataset has none "
            f"(no qrels/{config.split}.tsv): build the golden set from queries alone with an "
            "LLM judge, judge='local' (SmolLM2-135M on this machine, a tiny stand-in, needs "
            f"{INSTALL_HINT}) or judge='openai' (with $OPENAI_API_KEY)"
        )
    return ""


def make_judge(
    config: GoldenSetConfig,
    qrels: pd.DataFrame,
    *,
    cache: Any = None,
    ledger: Any = None,
    progress: bool = False,
) -> Judge:
    """The judge named by ``config.judge``.

    Offline judges read the dataset's labels (mapped by ``grade_map``) and refuse a dataset
    without labels (:class:`~ragnb.errors.InputError` saying which judge to use); a pair
    without a label counts as not relevant: grade 0, or the mapped grade of 0 (trec_eval's
    convention for unjudged documents). ``"openai"`` builds an
    :class:`~ragnb.judge.OpenAIJudge` whose key comes from ``$OPENAI_API_KEY`` only;
    ``"local"`` starts a local model server and builds an :class:`~ragnb.judge.OpenAIJudge` on
    it (see :func:`_local_judge`). ``progress``: an LLM judge's calls show a tqdm bar on
    stderr (``judge.client.progress`` turns it on and off).
    """
    from ragnb.judge import NoisyJudge, OpenAIJudge, QrelsJudge

    needs = missing_labels(config, qrels)
    if needs:
        raise InputError(needs, column="judge")
    if config.judge == "local":
        return _local_judge(config, cache=cache, ledger=ledger, progress=progress)
    if config.judge == "openai":
        return OpenAIJudge(
            config.model,
            prompt=config.prompt,
            base_url=config.base_url or None,
            rpm=config.rpm or None,
            tpm=config.tpm or None,
            cache=cache,
            ledger=ledger,
            progress=progress,
        )
    labels, gm = human_labels(config, qrels)
    unjudged = 0 if gm is None else int(gm[1].get(0, min(gm[1].values())))
    lo = min(unjudged, int(labels["relevance"].min()))
    hi = max(int(labels["relevance"].max()), lo + 1)
    if config.judge == "qrels":
        return QrelsJudge(labels, scale=(lo, hi), missing=unjudged)
    return NoisyJudge(
        labels, sd=float(config.judge_sd), seed=config.seed, scale=(lo, hi), missing=unjudged
    )


def _local_judge(
    config: GoldenSetConfig, *, cache: Any, ledger: Any, progress: bool = False
) -> Judge:
    """An :class:`~ragnb.judge.OpenAIJudge` on a :class:`~ragnb.llm.server.LocalLLMServer` it
    owns (``judge.local_server``): constrained output, ``logprobs=10``, ``config.prompt``.

    The ledger (when none is given: ``ledger.jsonl`` of the run folder, or in memory) prices
    the local model at 0 US dollars per token: it runs on this machine, so the budget check
    passes (the machine's time is not priced here).
    """
    from ragnb.core.paths import resolve_path
    from ragnb.judge import OpenAIJudge
    from ragnb.llm.ledger import LEDGER_FILE, Ledger
    from ragnb.llm.prices import ModelPrice
    from ragnb.llm.server import DEFAULT_MODEL, LocalLLMServer

    if ledger is None:
        path = resolve_path(config.export_dir) / LEDGER_FILE if config.export_dir else None
        ledger = Ledger(path)
    if ledger.prices.price(DEFAULT_MODEL) is None:
        ledger.prices.prices[DEFAULT_MODEL] = ModelPrice(
            DEFAULT_MODEL,
            0.0,
            0.0,
            ledger.prices.as_of,
            "a local model run on this machine by ragnb: no per-token charge",
        )
    # threads: one per core, or 1 on a busy machine (ragnb.llm.server._thread_count)
    server = LocalLLMServer(DEFAULT_MODEL).start()
    try:
        judge = OpenAIJudge(
            **server.client_options(),
            prompt=config.prompt,
            constrained="json_object_schema",
            logprobs=LOCAL_TOP_LOGPROBS,
            request_params={"max_tokens": 64},
            cache=cache,
            ledger=ledger,
            progress=progress,
        )
    except BaseException:
        server.stop()
        raise
    judge.local_server = server  # type: ignore[attr-defined]
    judge.model_name = LOCAL_MODEL_NAME  # type: ignore[attr-defined]
    weakref.finalize(judge, server.stop)
    return judge


def stop_local_server(judge: Judge) -> None:
    """Stop the local model server a ``local`` judge owns (nothing for other judges); the
    judge cannot answer new calls afterwards (its cached answers stay)."""
    server = getattr(judge, "local_server", None)
    if server is not None:
        server.stop()


def public_judge_info(judge: Judge) -> dict[str, Any]:
    """:meth:`Judge.describe` for manifests: ``base_url`` only when it holds no credentials
    (else None, with ``base_url_withheld`` saying why).

    Examples
    --------
    >>> from ragnb.judge import OpenAIJudge
    >>> j = OpenAIJudge(base_url="http://user:pw@127.0.0.1:9/v1")  # doctest: +SKIP
    >>> public_judge_info(j)["base_url"] is None  # doctest: +SKIP
    True
    """
    info = dict(judge.describe())
    if getattr(judge, "model_name", None):
        info["model_name"] = judge.model_name  # type: ignore[attr-defined]
    url, withheld = public_url(getattr(judge, "base_url", None))
    if "base_url" in info or withheld:
        info["base_url"] = url
        if withheld:
            info["base_url_withheld"] = "the URL holds credentials or a query string"
    return scrub(info)


def judge_banner(judge: Judge) -> str:
    """Markdown naming the judge; offline judges say they are not an LLM."""
    jid = judge.judge_id
    if jid.startswith("noisy-judge"):
        return f"**Judge: {jid} — simulated from the dataset's labels, not an LLM.**"
    if jid.startswith("qrels-judge"):
        return f"**Judge: {jid} — the dataset's own labels, not an LLM.**"
    if getattr(judge, "local_server", None) is not None:
        name = getattr(judge, "model_name", jid)
        options = (
            f"constrained output {getattr(judge, 'constrained', None)}, "
            f"top {getattr(judge, 'logprobs', 0)} token log-probabilities"
        )
        return f"**Judge: {jid} — {name}, served on this machine by llama.cpp ({options}).**"
    url, withheld = public_url(getattr(judge, "base_url", None))
    where = url or ("a server whose URL is withheld" if withheld else "$OPENAI_BASE_URL or OpenAI")
    return f"**Judge: {jid} — an LLM, at {where}.**"


def qrels_note(
    judge: Judge,
    *,
    judgements: int,
    queries: int,
    from_increments: int = 0,
    dataset_info: dict[str, Any] | None = None,
    findings: Any = (),
) -> str:
    """The note written beside a golden set's ``golden.qrels``: which judge made it (model,
    server without credentials, prompt and its hash, grade scale), when and by which ragnb, how
    many judgements, the dataset, and the degenerate-judge findings
    (:mod:`ragnb.judge.degenerate`).

    A TREC qrels file has no comment syntax that every reader (trec_eval among them) accepts,
    so the note is a plain-text file of its own; ``manifest.json`` holds the full provenance.
    Scrubbed of the API keys in the environment (:func:`ragnb.core.provenance.scrub`).
    """
    from ragnb.core.paths import display_path

    info = public_judge_info(judge)
    lines = [
        "golden.qrels: TREC qrels (query_id 0 doc_id grade, one judgement a line) built by "
        "ragnb's golden-set pipeline (pool, judge, prune, refine).",
        "",
        f"written:     {utc_now()} (ragnb {versions().get('ragnb', 'unknown')})",
        f"judgements:  {judgements} of {queries} queries ({from_increments} from incremental "
        "judging)",
        f"judge:       {judge.judge_id}",
    ]
    if info.get("model_name") or info.get("model"):
        lines.append(f"model:       {info.get('model_name') or info.get('model')}")
    if "base_url" in info:
        lines.append(f"server:      {info['base_url'] or 'withheld (it holds credentials)'}")
    prompt = info.get("prompt")
    if isinstance(prompt, dict):
        name = prompt.get("name") or prompt.get("id")
        digest = str(prompt.get("sha256", ""))[:16]
        lines.append(f"prompt:      {name} ({prompt.get('language', '')}), sha256 {digest}")
    if judge.scale:
        lo, hi = judge.scale
        lines.append(f"grade scale: {lo} to {hi} (higher is more relevant)")
    data = dataset_info or {}
    if data.get("dataset"):
        lines.append(f"dataset:     {data['dataset']} ({display_path(data.get('path', ''))})")
    findings = list(findings)
    lines += ["", f"degenerate-judge checks: {len(findings) or 'no'} finding(s)"]
    lines += [f"- {f}" for f in findings]
    if findings:
        lines.append("what to do: " + " ".join(dict.fromkeys(f.advice for f in findings)))
    lines += ["", "full provenance (config, stage hashes, costs): manifest.json", ""]
    return str(scrub("\n".join(lines)))
