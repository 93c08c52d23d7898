"""What LLM calls cost: offline token counts, a dated price table, a crash-safe ledger, budgets.

Three pieces, used by :mod:`ragnb.judge` and :mod:`ragnb.context.llm` and shown by notebooks:

:class:`PriceTable`
    Model -> US dollars per 1M input and output tokens, with the date and source of the prices. The
    one table of ragnb (:mod:`ragnb.llm.prices`, shipped in ``ragnb/llm/prices.yaml``) holds hand
    transcriptions of list prices; copy and edit it, and pass its path. A model with no price is
    never costed as 0: its cost is missing (NaN) and :func:`check_budget` refuses to pass.
:class:`Ledger`
    One JSON line per HTTP request (or per cache hit), appended with a single ``write(2)`` on a
    file opened ``O_APPEND``. Each paid request is written three times, with one ``request_id``:
    a ``pending`` line *before* it is sent (write-ahead), a ``sent`` mark as its body leaves for
    the server (:meth:`Ledger.mark_sent`), and its outcome when it ends. A process
    killed mid-request (SIGKILL) thus leaves pending lines without outcome: the next
    :class:`Ledger` on the file lists those that were sent (:attr:`Ledger.interrupted`) as
    requests that *may* have been billed, and the totals say "up to $X more" for them until a
    resume re-sends them (:meth:`Ledger.reconcile`); those never sent (killed while waiting for
    a connection, a rate limit or a worker) were never billed (:attr:`Ledger.unsent`) and count
    nowhere. An outcome without a request that left (no connection) is listed but not billed.
    A torn last line (a write cut short by a crash or a full disk) is moved aside on open
    (:meth:`ragnb.io.files.AppendLog.repair`), so the next line starts fresh.
    An answer without ``usage`` is costed from the local token count and flagged
    ``usage_estimated``; the totals say how much of the cost is estimated. Per-stage totals
    (:meth:`Ledger.totals`) and a JSON-safe summary for manifests (:meth:`Ledger.summary`).
    API keys and base URLs are never recorded.
:func:`estimate` and :func:`check_budget`
    A dry run before any call (:mod:`ragnb.llm.estimates`): the rendered prompts are counted
    offline with the model's BPE tokenizer (``bpe-openai``: ``o200k_base`` for gpt-4o, gpt-4.1,
    gpt-4.5, gpt-5 and the o series, ``cl100k_base`` for gpt-3.5 and gpt-4), plus an assumed
    answer length, and priced. For a model with no known tokenizer ``o200k_base`` is used and
    the row is flagged ``approximate``.

Ledger format
-------------
A JSON Lines file; each line an object with these keys:

================= ===========================================================================
``ts``            ISO 8601 UTC time the request ended (or the cache was read), ms precision
``run_id``        random id of the :class:`Ledger` object that wrote the line (one per run);
                  the answer of a batch carries the id of the run that submitted the batch
``stage``         the caller's label (``"judge"``, ``"s4_score"``, ``"context_recall"``, ...)
``judge_id``      the judge that made the call (``"openai-judge:gpt-4o-mini"``)
``model``         the model requested
``kind``          ``"grade"``, ``"rank"`` or ``"extract"``
``item``          what was judged, e.g. ``"q1/d7"`` (query id / document id or batch id)
``key``           the cache key of the call (SHA-256 of model, template, prompt, parameters)
``attempt``       1-based number of this HTTP request for the item (retries and the reminder
                  count); 0 for a cache hit
``status``        ``"ok"`` (an answer arrived), ``"cached"``, ``"http_<code>"``,
                  ``"timeout"``, ``"connection"``, ``"malformed"`` (unparseable body),
                  ``"error"`` (the client failed); ``"pending"`` (write-ahead: the request is
                  about to be sent), ``"sent"`` (the mark of a pending request whose body is
                  leaving for the server) and ``"interrupted"`` (a sent request whose process
                  was killed, reconciled by the run that re-sent it: counted as billed,
                  estimated);
                  for a call sent in a batch, ``"batch_error"`` (a line of the batch's error
                  file) or ``"batch_<status>"`` (the batch ended ``expired``, ``failed`` or
                  ``cancelled`` without answering it), both unbilled
``input_tokens``  int, the API's ``usage.prompt_tokens`` (0 when no answer arrived); for a
                  cache hit, the tokens of the original answer (not billed again)
``output_tokens`` int, ``usage.completion_tokens``; as above
``cached_input_tokens`` int, ``usage.prompt_tokens_details.cached_tokens``: the part of
                  ``input_tokens`` the provider read from its prompt cache, priced at the
                  model's ``cached_input`` price (as input when it has none); 0 when the
                  server reports none, and in ledgers written before the field existed
``cached``        bool: served from the cache, costs 0
``repeated``      bool: the item had been sent before (marked in flight by an earlier run that
                  never stored its answer: a crash or a failure), so this request pays again
``cost_usd``      float, US dollars; 0 for cache hits; null when the model has no price
``request_id``    random id of one HTTP request, shared by its pending line and its outcome
                  (null for cache hits)
``usage_estimated`` bool: the server sent no ``usage``; the tokens were counted locally
                  (prompt with the model's BPE tokenizer, answer likewise); a pending line's
                  tokens are always estimated (the prompt counted, the answer assumed)
``wait_s``        float, seconds the request waited for the rate limit before it was sent
                  (the endpoint's requests- and tokens-per-minute budget, the server's
                  ``x-ratelimit-*`` reset, the pause after a 429); 0 for cache hits and in
                  ledgers written before the field existed
``batch``         bool: the answer came from the provider's batch API
                  (:mod:`ragnb.llm.batch`), priced at the table's ``batch_discount`` (OpenAI:
                  half price); False in ledgers written before the field existed
``sent``          bool: the request left for the server (a batch: the batch was created), so it
                  may be billed; False on a pending line, on a cache hit, and on the outcome
                  of a request that never left (no connection: listed, never billed); True in
                  ledgers written before the field existed
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
import logging
import math
import os
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

import ragnb.llm.estimates as estimates
from ragnb.io.files import AppendLog, remove_stale_temporaries
from ragnb.llm.estimates import *  # noqa: F403 (re-exported: see __all__)
from ragnb.llm.prices import ModelPrice, PriceTable

__all__ = ["LEDGER_FILE", "Ledger", "ModelPrice", "PriceTable"]
__all__ += estimates.__all__

log = logging.getLogger("ragnb.llm.ledger")

#: The ledger's file name in a study's run or export folder.
LEDGER_FILE = "ledger.jsonl"

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
    "cached_input_tokens",
    "cached",
    "repeated",
    "cost_usd",
    "request_id",
    "usage_estimated",
    "wait_s",
    "batch",
    "sent",
)
#: Status of a write-ahead line, of the mark of its request having left, and of its outcome
#: after an interruption.
PENDING, SENT, INTERRUPTED = "pending", "sent", "interrupted"

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
        Every request's outcome and every cache hit, earlier runs' first (keys: see the module
        docstring); write-ahead ``pending`` lines are not entries.
    skipped_lines : int
        Lines of the existing file that could not be parsed (a torn last line included).
    torn_lines : int
        Torn last lines moved to ``<path>.torn`` on open (0 or 1 per open).
    interrupted : dict of str to dict
        Pending lines of earlier runs without outcome whose request was sent, by
        ``request_id``: requests in flight when a process was killed, which may have been
        billed.
    unsent : dict of str to dict
        Pending lines of earlier runs whose request never left (no ``sent`` mark, no outcome),
        by ``request_id``: never billed, counted nowhere.

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
        self.torn_lines = 0
        self.interrupted: dict[str, dict[str, Any]] = {}
        self.unsent: dict[str, dict[str, Any]] = {}
        self._pending: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._log: AppendLog | None = None
        if self.path is not None:
            if self.path.exists():
                self._log = AppendLog(self.path, fsync=self.fsync)
                self.torn_lines = self._log.repair()
                lines, self.skipped_lines = _read_lines(self.path)
                self.skipped_lines += self.torn_lines
                self.entries, self.interrupted, self.unsent = _split_pending(lines)
                if self.unsent:
                    log.info(
                        "%s: %d requests of an interrupted run were never sent (not billed)",
                        self.path,
                        len(self.unsent),
                    )
                if self.interrupted:
                    log.warning(
                        "%s: %d requests were in flight when an earlier run was interrupted; "
                        "they may have been billed (up to $%s)",
                        self.path,
                        len(self.interrupted),
                        _usd(_sum_cost(self.interrupted.values())),
                    )
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # what a write killed beside the ledger left (a stage file, an export)
            remove_stale_temporaries(self.path.parent)

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
        cached_input_tokens: int = 0,
        cached: bool = False,
        repeated: bool = False,
        judge_id: str = "",
        kind: str = "",
        request_id: str | None = None,
        usage_estimated: bool = False,
        run_id: str | None = None,
        wait_s: float = 0.0,
        batch: bool = False,
        sent: bool | None = None,
    ) -> dict[str, Any]:
        """Append one entry (a line of the file, written whole by one ``write``) and return it.

        ``request_id`` names the pending line (:meth:`begin`) this entry completes;
        ``cached_input_tokens`` is the part of ``input_tokens`` read from the provider's prompt
        cache (clipped to ``[0, input_tokens]``, priced by
        :meth:`ragnb.llm.prices.ModelPrice.cost`); ``usage_estimated`` flags tokens counted locally
        (the server sent no usage); ``run_id`` defaults to this ledger's (another run's id only to
        complete its lines); ``wait_s`` is the seconds the request waited for the rate limit before
        it was sent; ``batch`` marks an answer of the provider's batch API (priced at the table's
        batch discount). An entry completing a pending line of an earlier run (an answer of a batch
        that run submitted) removes it from :attr:`interrupted`. ``sent`` says whether the request
        left for the server; default: as its pending line was marked (:meth:`mark_sent`), False for
        a cache hit, else True (a request with no pending line).
        """
        cached_in = min(max(int(cached_input_tokens), 0), int(input_tokens))
        if cached:
            cost: float | None = 0.0
        else:
            c = self.prices.cost(model, input_tokens, output_tokens, cached_in, batch=batch)
            cost = None if math.isnan(c) else round(c, 10)
        entry = {
            "ts": _now(),
            "run_id": run_id or self.run_id,
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
            "cached_input_tokens": cached_in,
            "cached": bool(cached),
            "repeated": bool(repeated),
            "cost_usd": cost,
            "request_id": request_id,
            "usage_estimated": bool(usage_estimated),
            "wait_s": round(float(wait_s), 6),
            "batch": bool(batch),
        }
        with self._lock:
            if sent is None:
                ahead = self._pending.get(str(request_id)) if request_id is not None else None
                sent = (not cached) if ahead is None else bool(ahead["sent"])
            entry["sent"] = bool(sent) and status != PENDING
            self._write(entry)
            if status == PENDING:
                self._pending[str(request_id)] = dict(entry)
            else:
                if request_id is not None:
                    self._pending.pop(request_id, None)
                    self.interrupted.pop(request_id, None)
                    self.unsent.pop(request_id, None)
                self.entries.append(entry)
        return entry

    def mark_sent(self, request_id: str) -> None:
        """Append the ``sent`` mark of the pending request ``request_id``: its body is leaving for
        the server (from now on it may be billed). A second mark, or the mark of a
        request not pending, writes nothing."""
        with self._lock:
            ahead = self._pending.get(request_id)
            if ahead is None or ahead["sent"]:
                return
            ahead["sent"] = True
            self._write({**ahead, "ts": _now(), "status": SENT})

    def _write(self, entry: dict[str, Any]) -> None:
        """Append ``entry`` to the file (the caller holds the lock)."""
        if self.path is not None:
            if self._log is None:
                self._log = AppendLog(self.path, fsync=self.fsync)
            # one write(2) on an O_APPEND file: the line lands whole
            self._log.append(json.dumps(entry, ensure_ascii=False))

    def begin(
        self,
        *,
        stage: str,
        model: str,
        item: str,
        key: str,
        attempt: int,
        input_tokens: int,
        output_tokens: int,
        judge_id: str = "",
        kind: str = "",
        repeated: bool = False,
        batch: bool = False,
    ) -> str:
        """Write the ``pending`` line of a request about to be sent; return its ``request_id``.

        Parameters
        ----------
        input_tokens, output_tokens : int
            Estimates: the prompt counted locally, the answer length assumed (what a request
            killed in flight is priced at, "up to").
        batch : bool, default False
            A request of a batch submitted to the provider's batch API (priced at the batch
            rate).

        Returns
        -------
        str
            The id to pass to :meth:`record` with the request's outcome.
        """
        rid = uuid.uuid4().hex
        self.record(
            stage=stage,
            model=model,
            item=item,
            key=key,
            attempt=attempt,
            status=PENDING,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            repeated=repeated,
            judge_id=judge_id,
            kind=kind,
            request_id=rid,
            usage_estimated=True,
            batch=batch,
        )
        return rid

    def interrupted_keys(self) -> set[str]:
        """Cache keys of the :attr:`interrupted` requests."""
        with self._lock:
            return {e["key"] for e in self.interrupted.values()}

    def unsent_keys(self) -> set[str]:
        """Cache keys of the :attr:`unsent` requests (written ahead, never sent) of which no
        other request was sent: the calls no server has seen."""
        with self._lock:
            seen = {e["key"] for e in self.entries if e.get("sent", not e.get("cached"))}
            seen |= {e["key"] for e in self.interrupted.values()}
            return {e["key"] for e in self.unsent.values()} - seen

    def reconcile(self, key: str) -> int:
        """Complete the :attr:`interrupted` requests of ``key`` (a resume is re-sending it).

        Each gets an ``interrupted`` line under its own run: counted from then on as a billed
        request at its estimated cost (``usage_estimated``), no longer as "up to".

        Returns
        -------
        int
            Requests reconciled.
        """
        with self._lock:
            found = [rid for rid, e in self.interrupted.items() if e["key"] == key]
            for rid in found:
                old = self.interrupted.pop(rid)
                entry = {
                    **old,
                    "ts": _now(),
                    "status": INTERRUPTED,
                    "reconciled_by": self.run_id,
                    "sent": True,
                }
                self._write(entry)
                self.entries.append(entry)
        return len(found)

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
        """A ledger file as a frame (columns: see the module docstring), file order: the
        entries, without the write-ahead ``pending`` lines."""
        lines, _ = _read_lines(Path(path))
        return _frame(_split_pending(lines)[0])

    def frame(self, run_id: str | None = None) -> pd.DataFrame:
        """The entries as a frame; only those of ``run_id`` if given."""
        rows = [e for e in self.entries if run_id is None or e["run_id"] == run_id]
        return _frame(rows)

    def totals(self, by: str | Sequence[str] = "stage", run_id: str | None = None) -> pd.DataFrame:
        """Totals per group (default per stage), for notebooks and manifests.

        Returns
        -------
        DataFrame
            The ``by`` columns, then ``requests`` (HTTP requests sent: an attempt that never
            left, for want of a connection, is listed in the ledger but is not one),
            ``answered`` (requests with an answer), ``failed`` (requests without), ``cached``
            (cache hits), ``repeated`` (requests re-sent after an earlier run lost them),
            ``input_tokens``,
            ``output_tokens`` (billed: cache hits excluded), ``cached_input_tokens`` (the part of
            ``input_tokens`` the provider read from its prompt cache), ``cached_at_input_price``
            (those of them priced as input because the model has no ``cached_input`` price in
            the table), ``cost_usd`` (US dollars; NaN when a billed request has no price),
            ``unpriced`` (such requests), ``estimated``
            (billed requests whose tokens were counted locally: no ``usage`` in the answer, or
            interrupted), ``estimated_usd`` (their part of ``cost_usd``), ``wait_s`` (seconds
            the requests waited for the rate limit, summed), ``in_flight`` (requests of earlier
            runs interrupted in flight, not reconciled: may have been billed) and
            ``in_flight_usd`` (what they would cost: "up to", not in ``cost_usd``).
        """
        keys = [by] if isinstance(by, str) else list(by)
        df = self.frame(run_id)
        return _totals(df, keys, self._orphans(run_id), self.prices)

    def _orphans(self, run_id: str | None) -> pd.DataFrame:
        with self._lock:
            rows = [e for e in self.interrupted.values() if run_id in (None, e["run_id"])]
        return _frame(rows)

    def cost_note(self, run_id: str | None = None) -> str:
        """One sentence on the total cost: how much is estimated and how much more may be owed.

        Examples
        --------
        >>> Ledger(prices=PriceTable.from_dict({"models": {}})).cost_note()
        'No LLM request was billed.'
        """
        t = self.summary(run_id)["total"]
        if not t or (not t.get("requests") and not t.get("in_flight")):
            return "No LLM request was billed."
        cost = t.get("cost_usd")
        words = [
            f"{t['requests']} LLM requests: "
            + ("cost unknown (a model has no price)" if cost is None else f"${_usd(cost)}")
        ]
        if t.get("estimated"):
            words.append(
                f"${_usd(t['estimated_usd'] or 0.0)} of it estimated from local token counts "
                f"({t['estimated']} requests without usage from the server)"
            )
        if t.get("cached_input_tokens"):
            words.append(_prompt_cache_words(t))
        if t.get("in_flight"):
            words.append(
                f"up to ${_usd(t['in_flight_usd'] or 0.0)} more ({t['in_flight']} requests in "
                "flight at an interruption, which may have been billed)"
            )
        if t.get("wait_s"):
            words.append(f"{t['wait_s']:.1f} s waited for rate limits")
        return "; ".join(words) + "."

    def summary(self, run_id: str | None = None) -> dict[str, Any]:
        """JSON-safe totals per stage and overall, with the prices' date and source."""
        df = self.frame(run_id)
        orphans = self._orphans(run_id)
        per_stage = _totals(df, ["stage"], orphans, self.prices)
        overall = _totals(df.assign(_all="all"), ["_all"], orphans.assign(_all="all"), self.prices)
        overall = overall.drop(columns="_all")

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
            "torn_lines": self.torn_lines,
            "skipped_lines": self.skipped_lines,
        }


def _prompt_cache_words(total: dict[str, Any]) -> str:
    """The cost note's clause on input tokens read from the provider's prompt cache."""
    n, at_input = int(total["cached_input_tokens"]), int(total.get("cached_at_input_price") or 0)
    words = f"{n} of {total['input_tokens']} input tokens read from the provider's prompt cache"
    if at_input == n:
        return words + " (priced as input: no cached-input price for the model)"
    if at_input:
        return words + f" ({at_input} of them priced as input: no cached-input price)"
    return words + " (priced at the cached-input rate)"


def _py(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def _usd(x: float) -> str:
    return f"{x:.4f}"


def _sum_cost(entries: Any) -> float:
    return float(sum(e.get("cost_usd") or 0.0 for e in entries))


def _split_pending(
    lines: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """``(entries, interrupted, unsent)``: the lines that are neither write-ahead ``pending``
    lines nor ``sent`` marks; the pending lines no later line completes (same ``request_id``)
    whose request was sent (a ``sent`` mark, or a ledger written before marks existed: no
    ``sent`` field), by request id; and those whose request never left."""
    pending: dict[str, dict[str, Any]] = {}
    entries = []
    for e in lines:
        rid = e.get("request_id")
        status = e.get("status")
        if status == PENDING:
            if rid is not None:
                pending[str(rid)] = {**e, "sent": e.get("sent", True)}
            continue
        if status == SENT:
            if rid is not None and str(rid) in pending:
                pending[str(rid)]["sent"] = True
            continue
        if rid is not None:
            pending.pop(str(rid), None)
        entries.append(e)
    interrupted = {rid: e for rid, e in pending.items() if e["sent"]}
    unsent = {rid: e for rid, e in pending.items() if not e["sent"]}
    return entries, interrupted, unsent


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
    # ledgers written before cached_input_tokens existed lack it: none were cached
    df["cached_input_tokens"] = df["cached_input_tokens"].fillna(0)
    for col in ("attempt", "input_tokens", "output_tokens", "cached_input_tokens"):
        df[col] = df[col].astype("int64")
    # older ledgers lack usage_estimated and batch
    for col in ("cached", "repeated", "usage_estimated", "batch"):
        df[col] = df[col].astype(object).where(df[col].notna(), False).astype(bool)
    # older ledgers lack sent: every request they list was sent (cache hits were not)
    df["sent"] = df["sent"].astype(object).where(df["sent"].notna(), ~df["cached"]).astype(bool)
    df["request_id"] = df["request_id"].astype(object)
    df["cost_usd"] = pd.to_numeric(df["cost_usd"], errors="coerce").astype("float64")
    # older ledgers lack wait_s: they recorded no wait
    df["wait_s"] = pd.to_numeric(df["wait_s"], errors="coerce").fillna(0.0).astype("float64")
    return df


def _totals(
    df: pd.DataFrame,
    keys: list[str],
    orphans: pd.DataFrame | None = None,
    prices: PriceTable | None = None,
) -> pd.DataFrame:
    out = _billed_totals(df, keys, prices)
    extra = ["in_flight", "in_flight_usd"]
    if orphans is None or orphans.empty:
        return out.assign(in_flight=0, in_flight_usd=0.0)[[*out.columns, *extra]]
    flight = (
        orphans.assign(in_flight=1, in_flight_usd=orphans["cost_usd"].fillna(0.0))
        .groupby(keys, sort=True, dropna=False)[extra]
        .sum()
        .reset_index()
    )
    merged = out.merge(flight, on=keys, how="outer", indicator=True)
    only_flight = merged.pop("_merge") == "right_only"  # stages with nothing billed yet
    for col in out.columns:
        if col not in keys and col not in ("cost_usd", "estimated_usd", "wait_s"):
            merged[col] = merged[col].fillna(0).astype("int64")
    merged["wait_s"] = merged["wait_s"].astype("float64").fillna(0.0)
    for col in ("cost_usd", "estimated_usd"):
        merged[col] = merged[col].astype("float64").mask(only_flight, 0.0)
    merged["in_flight"] = merged["in_flight"].fillna(0).astype("int64")
    merged["in_flight_usd"] = merged["in_flight_usd"].astype("float64").fillna(0.0)
    return merged.sort_values(keys).reset_index(drop=True)[[*out.columns, *extra]]


def _billed_totals(
    df: pd.DataFrame, keys: list[str], prices: PriceTable | None = None
) -> pd.DataFrame:
    cols = [
        *keys,
        "requests",
        "answered",
        "failed",
        "cached",
        "repeated",
        "input_tokens",
        "output_tokens",
        "cached_input_tokens",
        "cached_at_input_price",
        "cost_usd",
        "unpriced",
        "estimated",
        "estimated_usd",
        "wait_s",
    ]
    if df.empty:
        return pd.DataFrame(columns=cols)
    billed = ~df["cached"] & df["sent"]
    estimated = billed & df["usage_estimated"]
    cached_in = df["cached_input_tokens"].where(billed, 0)
    rated = {
        m: prices is not None and prices.has_cached_input_price(str(m)) for m in set(df["model"])
    }
    has_rate = df["model"].map(rated).astype(bool)
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
            "cached_input_tokens": cached_in,
            "cached_at_input_price": cached_in.where(~has_rate, 0),
            "cost_usd": df["cost_usd"].where(billed | df["cached"], 0.0),
            "unpriced": (billed & df["cost_usd"].isna()).astype(int),
            "estimated": estimated.astype(int),
            "estimated_usd": df["cost_usd"].where(estimated, 0.0),
            "wait_s": df["wait_s"],
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
        cached_input_tokens=("cached_input_tokens", "sum"),
        cached_at_input_price=("cached_at_input_price", "sum"),
        cost_usd=("cost_usd", lambda s: s.sum(min_count=0) if s.notna().all() else math.nan),
        unpriced=("unpriced", "sum"),
        estimated=("estimated", "sum"),
        estimated_usd=("estimated_usd", lambda s: s.sum(min_count=0)),
        wait_s=("wait_s", "sum"),
    )
    return out.reset_index()[cols]
