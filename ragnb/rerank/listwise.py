"""An LLM reranker: sliding windows of candidates ordered by a judge's ``rank`` verb (RankGPT)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np

from ragnb.errors import InputError
from ragnb.rerank.base import CandidateGroup, Reranker

if TYPE_CHECKING:
    from ragnb.judge import Judge

__all__ = ["LLMListwiseReranker", "sliding_windows"]

log = logging.getLogger("ragnb.rerank")


def sliding_windows(n: int, window: int = 20, overlap: int = 10) -> list[tuple[int, int]]:
    """The windows ``[start, end)`` a listwise reranker orders, bottom of the list first.

    Windows of ``window`` positions step up by ``window - overlap``; the top window is cut at
    position 0 (it may be shorter), and windows of fewer than 2 positions are skipped. After a
    window is ordered, its best ``overlap`` candidates sit in the next window up, so a strong
    candidate can climb from the bottom to the top in one pass (RankGPT's sliding window, with
    rank_llm's fix that always reaches the top of the list).

    Parameters
    ----------
    n : int
        Candidates (positions 0 .. n-1, best first).
    window : int, default 20
    overlap : int, default 10
        ``0 <= overlap < window``.

    Returns
    -------
    list of (start, end)
        In the order they are ranked.

    Raises
    ------
    InputError
        On a negative ``n``, ``window < 2``, or ``overlap`` outside ``[0, window)``.

    Examples
    --------
    SPEAR's setting: 50 chunks, window 20, overlap 10, 4 calls per query.

    >>> sliding_windows(50)
    [(30, 50), (20, 40), (10, 30), (0, 20)]
    >>> sliding_windows(45)
    [(25, 45), (15, 35), (5, 25), (0, 15)]
    >>> sliding_windows(12)
    [(0, 12)]

    References
    ----------
    .. [1] Zou et al., SPEAR (arXiv 2507.06554), appendix E.
    .. [2] Sun et al., RankGPT (EMNLP 2023), section 3.3 (sliding window strategy).
    """
    for name, v in (("n", n), ("window", window), ("overlap", overlap)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise InputError(f"{name} must be an integer, got {v!r}")
    if n < 0:
        raise InputError(f"n must be >= 0, got {n}")
    if window < 2:
        raise InputError(f"window must be >= 2, got {window}")
    if not 0 <= overlap < window:
        raise InputError(f"overlap must be in [0, window={window}), got {overlap}")
    step = window - overlap
    out = []
    end = n
    while end > 0:
        start = max(0, end - window)
        if end - start >= 2:
            out.append((start, end))
        if start == 0:
            break
        end -= step
    return out


class LLMListwiseReranker(Reranker):
    """An LLM orders sliding windows of candidates, from the bottom of the list to the top.

    Each window of ``window`` candidates (default 20) is sent to the judge's ``rank`` verb
    (prompt: the judge's ``rank_prompt``, ``"listwise"`` by default) and put in the order it
    returns; windows overlap by ``overlap`` (default 10), so the best of a window are carried up
    into the next one (:func:`sliding_windows`). The final score of a candidate is its final
    position counted from the bottom: ``n`` for the first, ``1`` for the last.

    Parameters
    ----------
    judge : Judge, optional
        Usually an :class:`~ragnb.judge.OpenAIJudge` (its cache, retries, ledger and
        concurrency apply); any :class:`~ragnb.judge.Judge` with a ``rank`` verb works. Default:
        an ``OpenAIJudge(model, base_url=base_url, **judge_kwargs)``.
    model : str, optional
        The chat model when no judge is given (default ``"gpt-4o-mini"``).
    base_url : str, optional
        When no judge is given.
    window : int, default 20
        Candidates per call, 2 to 26 (the prompt labels them A-Z).
    overlap : int, default 10
    depth : int, optional
        Rerank only the first ``depth`` candidates (the rest keep their order below them);
        default all.
    stage : str, default "rerank"
        The ledger label of the calls.
    **judge_kwargs
        Passed to ``OpenAIJudge`` when no judge is given (``cache``, ``ledger``, ``api_key``...).

    Notes
    -----
    An answer that is not a valid permutation (after the judge's one reminder) or no answer at
    all leaves the window in its prior order and counts in ``usage()["failures"]``.
    :meth:`rerank_run` advances all queries in lock-step: the k-th window of every query goes
    out in one ``rank_many`` batch, so the judge's concurrency applies across queries.

    References
    ----------
    .. [1] Zou et al., SPEAR (arXiv 2507.06554), appendix E: LLM reranker, window 20, overlap
       10, 4 calls for 50 chunks.
    .. [2] Sun et al., RankGPT (EMNLP 2023), section 3.3.
    """

    def __init__(
        self,
        judge: Judge | None = None,
        *,
        model: str | None = None,
        base_url: str | None = None,
        window: int = 20,
        overlap: int = 10,
        depth: int | None = None,
        stage: str = "rerank",
        **judge_kwargs: Any,
    ) -> None:
        super().__init__()
        from ragnb.llm.prompts import LABELS

        sliding_windows(0, window, overlap)  # validates window and overlap
        if window > len(LABELS):
            raise InputError(f"window must be <= {len(LABELS)} (labels A-Z), got {window}")
        if depth is not None and (
            isinstance(depth, bool) or not isinstance(depth, int) or depth < 2
        ):
            raise InputError(f"depth must be an integer >= 2 or None, got {depth!r}")
        if judge is None:
            from ragnb.judge.llm import DEFAULT_JUDGE_MODEL, OpenAIJudge

            judge_kwargs.setdefault("progress", False)
            judge = OpenAIJudge(model or DEFAULT_JUDGE_MODEL, base_url=base_url, **judge_kwargs)
        elif judge_kwargs or base_url is not None:
            raise InputError("pass either a judge or the settings of a new one, not both")
        if not hasattr(judge, "rank_many"):
            raise InputError(f"judge must be a ragnb Judge, got {type(judge).__name__}")
        self.judge = judge
        self.model = getattr(judge, "model", None) or model or judge.judge_id
        self.window = window
        self.overlap = overlap
        self.depth = depth
        self.stage = stage
        self.name = f"llm:{self.model}"

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": "llm-listwise",
            "model": self.model,
            "params": {"window": self.window, "overlap": self.overlap, "depth": self.depth},
            "judge": self.judge.describe(),
        }

    def cost_usd(self) -> float:
        ledger = getattr(self.judge, "ledger", None)
        if ledger is None:
            return 0.0
        u = self.usage()
        return ledger.prices.cost(self.model, int(u["input_tokens"]), int(u["output_tokens"]))

    def _score_groups(self, groups: list[CandidateGroup], top_n: int | None) -> list[np.ndarray]:
        orders = [list(range(len(g.doc_ids))) for g in groups]
        plans = [
            sliding_windows(
                min(len(g.doc_ids), self.depth or len(g.doc_ids)), self.window, self.overlap
            )
            for g in groups
        ]
        for k in range(max((len(p) for p in plans), default=0)):
            items = []
            where = []
            for gi, (g, plan) in enumerate(zip(groups, plans, strict=True)):
                if k >= len(plan):
                    continue
                start, end = plan[k]
                idx = orders[gi][start:end]
                items.append(
                    {
                        "query_id": g.query_id,
                        "batch_id": f"w{k}:{start}-{end}",
                        "query": g.query,
                        "doc_ids": [g.doc_ids[i] for i in idx],
                        "passages": [g.texts[i] for i in idx],
                    }
                )
                where.append((gi, start, end))
            ranked = self.judge.rank_many(items, stage=self.stage)
            valid = ranked["valid"].to_numpy(dtype=bool)
            self._add(
                calls=len(ranked),
                cached_calls=int(ranked["cached"].sum()),
                http_requests=int(ranked["attempts"].sum()),
                input_tokens=int(ranked["input_tokens"].sum()),
                output_tokens=int(ranked["output_tokens"].sum()),
                failures=int((~valid).sum()),
            )
            for (gi, start, end), ok, perm in zip(
                where, valid.tolist(), ranked["permutation"].tolist(), strict=True
            ):
                if not ok:
                    continue
                window_idx = orders[gi][start:end]
                orders[gi][start:end] = [window_idx[p] for p in perm]
            bad = int((~valid).sum())
            if bad:
                log.warning(
                    "%s: %d of %d windows had no valid ranking and kept their order",
                    self.name,
                    bad,
                    len(ranked),
                )
        out = []
        for g, order in zip(groups, orders, strict=True):
            n = len(g.doc_ids)
            s = np.empty(n, dtype=np.float64)
            s[order] = np.arange(n, 0, -1, dtype=np.float64)
            out.append(s)
        return out
