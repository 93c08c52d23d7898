"""The judge of a golden set: built from notebook 02's parameters, described for manifests and
banners without secrets.

Offline judges (:class:`~ragnb.judge.QrelsJudge`, :class:`~ragnb.judge.NoisyJudge`) read the
dataset's labels mapped onto the judge's scale; an LLM judge
(:class:`~ragnb.judge.OpenAIJudge`) reads its key from ``$OPENAI_API_KEY`` only. What is
written about a judge names its ``base_url`` only when it holds no credentials, and every string
is scrubbed of the keys in the environment (:func:`ragnb.provenance.scrub`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ragnb.golden.config import GoldenSetConfig
from ragnb.judge.base import Judge
from ragnb.provenance import public_url, scrub

__all__ = ["human_labels", "judge_banner", "make_judge", "public_judge_info"]


def human_labels(config: GoldenSetConfig, qrels: pd.DataFrame) -> tuple[pd.DataFrame, Any]:
    """The dataset's labels mapped by ``config.grade_map``, and the map ``(name, dict)`` or
    None."""
    from ragnb.measures import map_grades, resolve_grade_map

    gm = resolve_grade_map(config.grade_map, qrels)
    labels = qrels[["query_id", "doc_id", "relevance"]].copy()
    if gm is not None:
        labels = map_grades(labels, gm[1])
    return labels, gm


def make_judge(
    config: GoldenSetConfig,
    qrels: pd.DataFrame,
    *,
    cache: Any = None,
    ledger: Any = None,
) -> Judge:
    """The judge named by ``config.judge``.

    Offline judges read the dataset's labels (mapped by ``grade_map``); a pair without a label
    counts as not relevant: grade 0, or the mapped grade of 0 (trec_eval's convention for
    unjudged documents). ``"openai"`` builds an :class:`~ragnb.judge.OpenAIJudge` whose key comes
    from ``$OPENAI_API_KEY`` only.
    """
    from ragnb.judge import NoisyJudge, OpenAIJudge, QrelsJudge

    if config.judge == "openai":
        return OpenAIJudge(
            config.model,
            prompt=config.prompt,
            base_url=config.base_url or None,
            cache=cache,
            ledger=ledger,
            progress=False,
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
    url, withheld = public_url(getattr(judge, "base_url", None))
    where = url or ("a server whose URL is withheld" if withheld else "$OPENAI_BASE_URL or OpenAI")
    return f"**Judge: {jid} — an LLM, at {where}.**"
