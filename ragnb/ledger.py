"""What LLM calls cost: offline token counts, a dated price table, a crash-safe ledger, budgets.

Three pieces, used by :mod:`ragnb.judge` and :mod:`ragnb.context.llm` and shown by notebooks:

:class:`PriceTable`
    Model -> US dollars per 1M input and output tokens, with the date and source of the prices.
    The one table of ragnb (:mod:`ragnb.prices`, shipped in ``ragnb/prices.yaml``) holds hand
    transcriptions of list prices; copy and edit it, and pass its path. A model with no price
    is never costed as 0: its cost is missing (NaN) and :func:`check_budget` refuses to pass.
:class:`Ledger`
    One JSON line per HTTP request (or per cache hit), appended with a single ``write(2)`` on a
    file opened ``O_APPEND`` as soon as the request ends, so a killed process (SIGKILL) loses
    nothing that was billed. Per-stage totals (:meth:`Ledger.totals`) and a JSON-safe summary for
    manifests (:meth:`Ledger.summary`). API keys and base URLs are never recorded.
:func:`estimate` and :func:`check_budget`
    A dry run before any call: the rendered prompts are counted offline with the model's BPE
    tokenizer (``bpe-openai``: ``o200k_base`` for gpt-4o, gpt-4.1, gpt-4.5, gpt-5 and the o
    series, ``cl100k_base`` for gpt-3.5 and gpt-4), plus an assumed answer length, and priced.
    For a model with no known tokenizer ``o200k_base`` is used and the row is flagged
    ``approximate``.

Ledger format
-------------
A JSON Lines file; each line an object with these keys:

================= ===========================================================================
``ts``            ISO 8601 UTC time the request ended (or the cache was read), ms precision
``run_id``        random id of the :class:`Ledger` object that wrote the line (one per run)
``stage``         the caller's label (``"judge"``, ``"s4_score"``, ``"context_recall"``, ...)
``judge_id``      the judge that made the call (``"openai-judge:gpt-4o-mini"``)
``model``         the model requested
``kind``          ``"grade"``, ``"rank"`` or ``"extract"``
``item``          what was judged, e.g. ``"q1/d7"`` (query id / document id or batch id)
``key``           the cache key of the call (SHA-256 of model, template, prompt, parameters)
``attempt``       1-based number of this HTTP request for the item (retries and the reminder
                  count); 0 for a cache hit
``status``        ``"ok"`` (an answer arrived), ``"cached"``, ``"http_<code>"``,
                  ``"timeout"``, ``"connection"`` or ``"malformed"`` (unparseable body)
``input_tokens``  int, the API's ``usage.prompt_tokens`` (0 when no answer arrived); for a
                  cache hit, the tokens of the original answer (not billed again)
``output_tokens`` int, ``usage.completion_tokens``; as above
``cached``        bool: served from the cache, costs 0
``repeated``      bool: the item had been sent before (marked in flight by an earlier run that
                  never stored its answer: a crash or a failure), so this request pays again
``cost_usd``      float, US dollars; 0 for cache hits; null when the model has no price
================= ===========================================================================

References
----------
.. [1] OpenAI Cookbook, "How to count tokens with tiktoken": 3 tokens per chat message and 3
   for the reply priming, on top of the tokens of the contents.
.. [2] Dallaire, "Practical RAG Evaluation" (arXiv 2511.09545), section 3 (cost in the
   Cost-Latency-Quality lens; manifests of every pipeline stage).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from ragnb.errors import InputError
from ragnb.io import AppendLog
from ragnb.prices import ModelPrice, PriceTable

__all__ = [
    "BudgetExceededError",
    "CostEstimate",
    "Ledger",
    "ModelPrice",
    "PlannedCall",
    "PriceTable",
    "check_budget",
    "count_message_tokens",
    "count_tokens",
    "encoding_for_model",
    "estimate",
    "estimate_calls",
]

LEDGER_FIELDS = (
    "ts",
    "run_id",
    "stage",
    "judge_id",
    "model",
    "kind",
    "item",
    "key",
    "attempt",
    "status",
    "input_tokens",
    "output_tokens",
    "cached",
    "repeated",
    "cost_usd",
)

# ----------------------------------------------------------------------------- tokens

_O200K_PREFIXES = (
    "gpt-4o",
    "chatgpt-4o",
    "gpt-4.1",
    "gpt-4.5",
    "gpt-5",
    "gpt-oss",
    "o1",
    "o3",
    "o4",
)
_CL100K_PREFIXES = ("gpt-3.5", "gpt-35", "gpt-4", "text-embedding-3", "text-embedding-ada-002")
_TOKENS_PER_MESSAGE = 3
_REPLY_PRIMING = 3


def encoding_for_model(model: str) -> tuple[str, bool]:
    """The BPE encoding of ``model`` and whether it is known (True) or a guess (False).

    A provider prefix (``"openai/gpt-4o"``) is dropped. gpt-4o*, gpt-4.1*, gpt-4.5*, gpt-5*,
    gpt-oss*, o1*, o3*, o4* -> ``o200k_base``; gpt-3.5*, other gpt-4*, text-embedding-3* and
    ada-002 -> ``cl100k_base``; anything else -> ``o200k_base``, approximate.

    Examples
    --------
    >>> encoding_for_model("gpt-4o-mini"), encoding_for_model("gpt-4-0613")
    (('o200k_base', True), ('cl100k_base', True))
    >>> encoding_for_model("llama-3.1-8b-instruct")
    ('o200k_base', False)
    """
    name = model.rsplit("/", 1)[-1].lower()
    if name.startswith(_O200K_PREFIXES):
        return "o200k_base", True
    if name.startswith(_CL100K_PREFIXES):
        return "cl100k_base", True
    return "o200k_base", False


@lru_cache(maxsize=4)
def _encoding(name: str) -> Any:
    import warnings

    with warnings.catch_warnings():  # bpe-openai 0.1 reads its tables with a deprecated API
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai

        enc = bpe_openai.get_encoding(name)
        enc.encode_ordinary("load the tables now")  # they load lazily, on the first call
    return enc


def count_tokens(text: str, model: str) -> tuple[int, bool]:
    """Tokens of ``text`` for ``model``, counted offline, and whether the tokenizer is exact.

    Special-token strings such as ``<|endoftext|>`` are counted as ordinary text.

    Returns
    -------
    n_tokens : int
    exact : bool
        False when the model's tokenizer is unknown and ``o200k_base`` stood in.
    """
    name, exact = encoding_for_model(model)
    return len(_encoding(name).encode_ordinary(text)), exact


def count_message_tokens(messages: Sequence[Mapping[str, str]], model: str) -> tuple[int, bool]:
    """Prompt tokens of a chat request: contents plus 3 per message plus 3 for the reply.

    Returns
    -------
    n_tokens : int
    exact : bool
        As :func:`count_tokens`; the per-message overhead follows OpenAI's cookbook [1]_.

    References
    ----------
    .. [1] OpenAI Cookbook, "How to count tokens with tiktoken".
    """
    total = _REPLY_PRIMING
    exact = True
    for m in messages:
        n, ex = count_tokens(str(m.get("content") or ""), model)
        total += n + _TOKENS_PER_MESSAGE
        exact = exact and ex
    return total, exact


# ----------------------------------------------------------------------------- the ledger


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Ledger:
    """Every LLM request and cache hit, with tokens and US dollars, appended to a JSONL file.

    Parameters
    ----------
    path : str or PathLike, optional
        The JSON Lines file; created if missing, appended to if present (its earlier lines are
        loaded, so totals cover a job resumed after a crash). None: kept in memory only.
    prices : PriceTable, optional
        Default: :meth:`PriceTable.load` (the shipped table).
    run_id : str, optional
        Default: 12 random hex digits.
    fsync : bool, default False
        ``fsync`` after every line. Lines survive a killed process without it (the kernel
        holds them); it adds protection against power loss at ~1 ms per request.

    Attributes
    ----------
    entries : list of dict
        Every line, earlier runs' first (keys: see the module docstring).
    skipped_lines : int
        Lines of the existing file that could not be parsed (none unless the file was edited).

    Examples
    --------
    >>> led = Ledger(prices=PriceTable.from_dict({"models": {"m": {"input": 1, "output": 2}}}))
    >>> e = led.record(stage="judge", model="m", item="q1/d1", key="k", attempt=1,
    ...                status="ok", input_tokens=1000, output_tokens=10)
    >>> e["cost_usd"]
    0.00102
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        prices: PriceTable | None = None,
        run_id: str | None = None,
        fsync: bool = False,
    ) -> None:
        self.path = None if path is None else Path(path)
        self.prices = prices if prices is not None else PriceTable.load()
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.fsync = fsync
        self.entries: list[dict[str, Any]] = []
        self.skipped_lines = 0
        self._lock = threading.Lock()
        self._log: AppendLog | None = None
        if self.path is not None:
            if self.path.exists():
                self.entries, self.skipped_lines = _read_lines(self.path)
            self.path.parent.mkdir(parents=True, exist_ok=True)

    # -- writing

    def record(
        self,
        *,
        stage: str,
        model: str,
        item: str,
        key: str,
        attempt: int,
        status: str,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cached: bool = False,
        repeated: bool = False,
        judge_id: str = "",
        kind: str = "",
    ) -> dict[str, Any]:
        """Append one entry (a line of the file, written whole by one ``write``) and return it."""
        if cached:
            cost: float | None = 0.0
        else:
            c = self.prices.cost(model, input_tokens, output_tokens)
            cost = None if math.isnan(c) else round(c, 10)
        entry = {
            "ts": _now(),
            "run_id": self.run_id,
            "stage": stage,
            "judge_id": judge_id,
            "model": model,
            "kind": kind,
            "item": item,
            "key": key,
            "attempt": int(attempt),
            "status": status,
            "input_tokens": int(input_tokens),
            "output_tokens": int(output_tokens),
            "cached": bool(cached),
            "repeated": bool(repeated),
            "cost_usd": cost,
        }
        line = json.dumps(entry, ensure_ascii=False)
        with self._lock:
            if self.path is not None:
                if self._log is None:
                    self._log = AppendLog(self.path, fsync=self.fsync)
                self._log.append(line)  # one write(2) on an O_APPEND file: the line lands whole
            self.entries.append(entry)
        return entry

    def close(self) -> None:
        """Close the file (reopened by the next :meth:`record`)."""
        with self._lock:
            if self._log is not None:
                self._log.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    # -- reading

    @staticmethod
    def read(path: str | os.PathLike[str]) -> pd.DataFrame:
        """A ledger file as a frame (columns: see the module docstring), file order."""
        entries, _ = _read_lines(Path(path))
        return _frame(entries)

    def frame(self, run_id: str | None = None) -> pd.DataFrame:
        """The entries as a frame; only those of ``run_id`` if given."""
        rows = [e for e in self.entries if run_id is None or e["run_id"] == run_id]
        return _frame(rows)

    def totals(self, by: str | Sequence[str] = "stage", run_id: str | None = None) -> pd.DataFrame:
        """Totals per group (default per stage), for notebooks and manifests.

        Returns
        -------
        DataFrame
            The ``by`` columns, then ``requests`` (HTTP requests made), ``answered`` (requests
            with an answer), ``failed`` (requests without), ``cached`` (cache hits),
            ``repeated`` (requests re-sent after an earlier run lost them), ``input_tokens``,
            ``output_tokens`` (billed: cache hits excluded), ``cost_usd`` (US dollars; NaN when
            a billed request has no price) and ``unpriced`` (such requests).
        """
        keys = [by] if isinstance(by, str) else list(by)
        df = self.frame(run_id)
        return _totals(df, keys)

    def summary(self, run_id: str | None = None) -> dict[str, Any]:
        """JSON-safe totals per stage and overall, with the prices' date and source."""
        df = self.frame(run_id)
        per_stage = _totals(df, ["stage"])
        overall = _totals(df.assign(_all="all"), ["_all"]).drop(columns="_all")

        def rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
            out = []
            for rec in frame.to_dict(orient="records"):
                out.append(
                    {
                        k: (None if isinstance(v, float) and math.isnan(v) else _py(v))
                        for k, v in rec.items()
                    }
                )
            return out

        return {
            "path": None if self.path is None else str(self.path),
            "run_id": self.run_id,
            "runs": sorted({e["run_id"] for e in self.entries}),
            "prices": self.prices.describe(),
            "stages": rows(per_stage),
            "total": (rows(overall) or [{}])[0],
        }


def _py(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def _read_lines(path: Path) -> tuple[list[dict[str, Any]], int]:
    entries = []
    skipped = 0
    with path.open(encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                skipped += 1
                continue
            if isinstance(obj, dict):
                entries.append(obj)
            else:
                skipped += 1
    return entries, skipped


def _frame(entries: list[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame(entries, columns=list(LEDGER_FIELDS))
    for col in ("attempt", "input_tokens", "output_tokens"):
        df[col] = df[col].astype("int64")
    for col in ("cached", "repeated"):
        df[col] = df[col].astype(bool)
    df["cost_usd"] = pd.to_numeric(df["cost_usd"], errors="coerce").astype("float64")
    return df


def _totals(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    cols = [
        *keys,
        "requests",
        "answered",
        "failed",
        "cached",
        "repeated",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "unpriced",
    ]
    if df.empty:
        return pd.DataFrame(columns=cols)
    billed = ~df["cached"]
    work = pd.DataFrame(
        {
            **{k: df[k] for k in keys},
            "requests": billed.astype(int),
            "answered": (billed & (df["status"] == "ok")).astype(int),
            "failed": (billed & (df["status"] != "ok")).astype(int),
            "cached": df["cached"].astype(int),
            "repeated": (billed & df["repeated"]).astype(int),
            "input_tokens": df["input_tokens"].where(billed, 0),
            "output_tokens": df["output_tokens"].where(billed, 0),
            "cost_usd": df["cost_usd"],
            "unpriced": (billed & df["cost_usd"].isna()).astype(int),
        }
    )
    out = work.groupby(keys, sort=True, dropna=False).agg(
        requests=("requests", "sum"),
        answered=("answered", "sum"),
        failed=("failed", "sum"),
        cached=("cached", "sum"),
        repeated=("repeated", "sum"),
        input_tokens=("input_tokens", "sum"),
        output_tokens=("output_tokens", "sum"),
        cost_usd=("cost_usd", lambda s: s.sum(min_count=0) if s.notna().all() else math.nan),
        unpriced=("unpriced", "sum"),
    )
    return out.reset_index()[cols]


# ----------------------------------------------------------------------------- estimates


@dataclass(frozen=True)
class PlannedCall:
    """One LLM call a job would make (what :func:`estimate` prices).

    Attributes
    ----------
    item : str
        ``"query_id/doc_id"`` or ``"query_id/batch_id"``.
    query_id : str
    model : str
    stage : str
    messages : list of dict
        The rendered chat messages.
    output_tokens : int
        Assumed answer length (the template's ``expected_output_tokens`` unless overridden).
    cached : bool
        The answer is already in the cache: the call will not be made.
    """

    item: str
    query_id: str
    model: str
    stage: str
    messages: list[dict[str, str]]
    output_tokens: int
    cached: bool = False


@dataclass
class CostEstimate:
    """A dry-run cost estimate.

    Attributes
    ----------
    frame : DataFrame
        One row per planned call: ``item``, ``query_id``, ``stage``, ``model``,
        ``input_tokens`` (counted offline), ``output_tokens`` (assumed), ``cached`` (bool; such
        calls cost 0), ``encoding``, ``approximate`` (bool: no known tokenizer for the model),
        ``cost_usd`` (US dollars; NaN when the model has no price).
    total_usd : float
        US dollars over the uncached calls; NaN when one of them has no price.
    prices : dict
        Date, source and file of the price table.
    notes : list of str
        What the estimate leaves out.
    """

    frame: pd.DataFrame
    total_usd: float
    prices: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    @property
    def calls(self) -> int:
        """Calls that will be made (uncached)."""
        return int((~self.frame["cached"]).sum())

    @property
    def cached_calls(self) -> int:
        """Calls answered from the cache (cost 0)."""
        return int(self.frame["cached"].sum())

    @property
    def approximate(self) -> bool:
        """True when a token count used a stand-in tokenizer."""
        return bool(self.frame["approximate"].any())

    @property
    def unpriced_models(self) -> list[str]:
        """Models of uncached calls with no price in the table."""
        f = self.frame
        return sorted(set(f.loc[~f["cached"] & f["cost_usd"].isna(), "model"]))

    def summary(self) -> dict[str, Any]:
        """JSON-safe totals, for manifests and notebooks."""
        f = self.frame[~self.frame["cached"]]
        return {
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "input_tokens": int(f["input_tokens"].sum()),
            "output_tokens": int(f["output_tokens"].sum()),
            "total_usd": None if math.isnan(self.total_usd) else self.total_usd,
            "approximate": self.approximate,
            "unpriced_models": self.unpriced_models,
            "prices": self.prices,
            "notes": list(self.notes),
        }

    def __repr__(self) -> str:
        s = self.summary()
        total = "unknown (unpriced models)" if s["total_usd"] is None else f"${s['total_usd']:.4f}"
        approx = " (approximate token counts)" if s["approximate"] else ""
        return (
            f"CostEstimate({s['calls']} calls, {s['cached_calls']} cached, "
            f"{s['input_tokens']} input + {s['output_tokens']} output tokens, {total}{approx}; "
            f"prices as of {self.prices.get('as_of')})"
        )


def estimate(
    judge: Any,
    items: Any,
    *,
    kind: str = "grade",
    output_tokens: int | None = None,
    stage: str | None = None,
    prices: PriceTable | None = None,
) -> CostEstimate:
    """Price a judging job before running it: count the rendered prompts' tokens offline.

    Parameters
    ----------
    judge : Judge
        Anything with ``plan(items, kind=..., stage=...) -> list[PlannedCall]``
        (:class:`ragnb.judge.OpenAIJudge`; offline judges plan no calls).
    items : DataFrame or list of dict
        What :meth:`ragnb.judge.Judge.grade_many` (``kind="grade"``) or
        :meth:`~ragnb.judge.Judge.rank_many` (``kind="rank"``) would take.
    kind : {"grade", "rank"}
    output_tokens : int, optional
        Assumed answer length in tokens; default the prompt template's
        ``expected_output_tokens``.
    stage : str, optional
        Stage label of the planned calls.
    prices : PriceTable, optional
        Default: the judge's ledger's table, else the shipped table.

    Returns
    -------
    CostEstimate
        ``total_usd`` counts uncached calls once each: retries after faults and reminders after
        invalid answers (which re-send the prompt) are not included.

    Raises
    ------
    InputError
        When the items lack a field a prompt needs (from the judge's planning).

    References
    ----------
    .. [1] Dallaire (arXiv 2511.09545), section 3: cost is planned before spending it.
    """
    calls: list[PlannedCall] = list(judge.plan(items, kind=kind, stage=stage))
    if prices is None:
        ledger = getattr(judge, "ledger", None)
        prices = ledger.prices if ledger is not None else PriceTable.load()
    return estimate_calls(calls, prices=prices, output_tokens=output_tokens)


def estimate_calls(
    calls: Sequence[PlannedCall],
    *,
    prices: PriceTable | None = None,
    output_tokens: int | None = None,
    notes: Sequence[str] = (),
) -> CostEstimate:
    """Price planned calls (see :func:`estimate`); ``notes`` are added to the estimate's."""
    prices = prices if prices is not None else PriceTable.load()
    rows = []
    for c in calls:
        n_in, exact = count_message_tokens(c.messages, c.model)
        n_out = int(output_tokens if output_tokens is not None else c.output_tokens)
        cost = 0.0 if c.cached else prices.cost(c.model, n_in, n_out)
        rows.append(
            (
                c.item,
                c.query_id,
                c.stage,
                c.model,
                n_in,
                n_out,
                bool(c.cached),
                encoding_for_model(c.model)[0],
                not exact,
                cost,
            )
        )
    frame = pd.DataFrame(
        rows,
        columns=[
            "item",
            "query_id",
            "stage",
            "model",
            "input_tokens",
            "output_tokens",
            "cached",
            "encoding",
            "approximate",
            "cost_usd",
        ],
    )
    frame = frame.astype(
        {
            "input_tokens": "int64",
            "output_tokens": "int64",
            "cached": bool,
            "approximate": bool,
            "cost_usd": "float64",
        }
    )
    billed = frame.loc[~frame["cached"], "cost_usd"]
    total = float(billed.sum()) if billed.notna().all() else math.nan
    all_notes = [
        "retries after faults and reminders after invalid answers are not included",
        "output tokens are assumed, not counted",
        *notes,
    ]
    if frame["approximate"].any():
        models = sorted(set(frame.loc[frame["approximate"], "model"]))
        all_notes.append(f"no known tokenizer for {models}: o200k_base counts are approximate")
    return CostEstimate(frame, total, prices.describe(), all_notes)


class BudgetExceededError(RuntimeError):
    """A cost estimate is over budget, or cannot be priced."""


def check_budget(estimate: CostEstimate, budget_usd: float) -> float:
    """Stop a notebook before it spends more than ``budget_usd``.

    Parameters
    ----------
    estimate : CostEstimate
        From :func:`estimate`.
    budget_usd : float
        US dollars, >= 0.

    Returns
    -------
    float
        The estimated total (US dollars) when within budget.

    Raises
    ------
    BudgetExceededError
        When the estimate exceeds the budget, or some uncached call's model has no price.
    InputError
        When ``budget_usd`` is negative or not a number.
    """
    if isinstance(budget_usd, bool) or not isinstance(budget_usd, int | float):
        raise InputError(f"budget_usd must be a number of US dollars, got {budget_usd!r}")
    if not budget_usd >= 0:
        raise InputError(f"budget_usd must be >= 0, got {budget_usd!r}")
    s = estimate.summary()
    if estimate.unpriced_models:
        raise BudgetExceededError(
            f"cannot check the budget: no price for model(s) {estimate.unpriced_models} in the "
            f"price table ({estimate.prices.get('path') or 'shipped table'}); add them to a "
            "copy of ragnb/prices.yaml and pass it as prices="
        )
    total = float(estimate.total_usd)
    if total > budget_usd:
        approx = " (token counts approximate)" if s["approximate"] else ""
        raise BudgetExceededError(
            f"estimated cost ${total:.4f} for {s['calls']} calls ({s['input_tokens']} input + "
            f"{s['output_tokens']} assumed output tokens{approx}, prices as of "
            f"{estimate.prices.get('as_of')}) exceeds the budget ${budget_usd:.4f}; judge fewer "
            "items, use a cheaper model, or raise budget_usd"
        )
    return total
