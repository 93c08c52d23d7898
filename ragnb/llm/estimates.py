"""What LLM calls will cost, before they are made: offline token counts and dry-run estimates.

Part of :mod:`ragnb.llm.ledger` (which re-exports every name here): the rendered prompts are counted
offline with the model's BPE tokenizer (``bpe-openai``: ``o200k_base`` for gpt-4o, gpt-4.1,
gpt-4.5, gpt-5 and the o series, ``cl100k_base`` for gpt-3.5 and gpt-4), plus an assumed answer
length, and priced by a :class:`~ragnb.llm.prices.PriceTable`; :func:`check_budget` stops a notebook
before it spends more than its budget. The same counts cost an answer that arrived without
``usage`` and the write-ahead line of a request about to be sent.

References
----------
.. [1] OpenAI Cookbook, "How to count tokens with tiktoken": 3 tokens per chat message and 3
   for the reply priming, on top of the tokens of the contents.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import pandas as pd

from ragnb.core.lazylibs import require
from ragnb.errors import BudgetExceededError, InputError
from ragnb.llm.prices import PriceTable

__all__ = [
    "BudgetExceededError",
    "CostEstimate",
    "PlannedCall",
    "cacheable_tokens",
    "check_budget",
    "count_message_tokens",
    "count_tokens",
    "encoding_for_model",
    "estimate",
    "estimate_calls",
    "shared_prefixes",
]

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
        bpe_openai = require("bpe_openai")

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
    template : str, default ""
        The prompt template's id (``name/language#hash8``).
    prefix : list of dict, default empty
        The messages every call of the template begins with, cut at the first ``{field}``
        (:meth:`ragnb.llm.PromptTemplate.static_prefix`): what a provider's prompt cache can
        serve to all calls after the first.
    """

    item: str
    query_id: str
    model: str
    stage: str
    messages: list[dict[str, str]]
    output_tokens: int
    cached: bool = False
    template: str = ""
    prefix: list[dict[str, str]] = field(default_factory=list)


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
    prefixes : DataFrame
        One row per (model, template) of the uncached calls (:func:`shared_prefixes`): the
        prompt prefix the calls share and what a provider's prompt cache could save on it.
    """

    frame: pd.DataFrame
    total_usd: float
    prices: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    prefixes: pd.DataFrame = field(default_factory=lambda: _prefix_frame([]))

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
            "shared_prefixes": [
                {k: _json_value(v) for k, v in r.items()}
                for r in self.prefixes.to_dict(orient="records")
            ],
        }

    def prefix_note(self) -> str:
        """One sentence per template on the prompt prefix its calls share, its tokens and what
        a provider's prompt cache could save on it ("" when no call is planned).

        Examples
        --------
        >>> CostEstimate(pd.DataFrame(), 0.0, {}).prefix_note()
        ''
        """
        words = []
        for r in self.prefixes.itertuples(index=False):
            head = f"{r.calls} calls of {r.template or 'the prompt'} ({r.model}) share a prefix "
            head += f"of {r.prefix_tokens} tokens ({r.prefix_preview!r})"
            if r.cacheable_tokens == 0:
                tail = (
                    f"; shorter than the {PROMPT_CACHE_MIN_TOKENS} tokens a provider's prompt "
                    "cache needs, so it saves nothing"
                )
            elif math.isnan(r.saving_usd):
                tail = f"; {r.cacheable_tokens} tokens cacheable per call (no price for the model)"
            else:
                rate = "" if r.cached_input_price else " (no cached-input price: priced as input)"
                tail = (
                    f"; a prompt cache could serve {r.cacheable_tokens} tokens of each call after "
                    f"the first: up to ${r.saving_usd:.4f} less{rate}"
                )
            words.append(head + tail + ".")
        return " ".join(words)

    def __repr__(self) -> str:
        s = self.summary()
        total = "unknown (unpriced models)" if s["total_usd"] is None else f"${s['total_usd']:.4f}"
        approx = " (approximate token counts)" if s["approximate"] else ""
        return (
            f"CostEstimate({s['calls']} calls, {s['cached_calls']} cached, "
            f"{s['input_tokens']} input + {s['output_tokens']} output tokens, {total}{approx}; "
            f"prices as of {self.prices.get('as_of')})"
        )


#: OpenAI's prompt cache: prompts of at least 1,024 tokens, hits in steps of 128 tokens.
PROMPT_CACHE_MIN_TOKENS, PROMPT_CACHE_STEP_TOKENS = 1024, 128

_PREFIX_COLUMNS = [
    "model",
    "template",
    "prefix_preview",
    "prefix_chars",
    "prefix_tokens",
    "calls",
    "cacheable_tokens",
    "cached_input_price",
    "saving_usd",
]


def _json_value(v: Any) -> Any:
    v = v.item() if hasattr(v, "item") else v
    return None if isinstance(v, float) and math.isnan(v) else v


def _prefix_frame(rows: list[tuple[Any, ...]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=_PREFIX_COLUMNS)
    return frame.astype(
        {
            "prefix_chars": "int64",
            "prefix_tokens": "int64",
            "calls": "int64",
            "cacheable_tokens": "int64",
            "cached_input_price": bool,
            "saving_usd": "float64",
        }
    )


def cacheable_tokens(prefix_tokens: int) -> int:
    """Tokens of a shared prefix that OpenAI's prompt cache can serve: none below 1,024, else
    the prefix rounded down to a multiple of 128.

    References
    ----------
    .. [1] OpenAI, "Prompt caching" guide: caching applies to prompts of 1,024 tokens or more;
       cache hits occur in increments of 128 tokens.

    Examples
    --------
    >>> cacheable_tokens(900), cacheable_tokens(1024), cacheable_tokens(1300)
    (0, 1024, 1280)
    """
    n = int(prefix_tokens)
    if n < PROMPT_CACHE_MIN_TOKENS:
        return 0
    return n - n % PROMPT_CACHE_STEP_TOKENS


def shared_prefixes(calls: Sequence[PlannedCall], prices: PriceTable) -> pd.DataFrame:
    """The prompt prefix each template's uncached calls share, and what caching it could save.

    Parameters
    ----------
    calls : sequence of PlannedCall
        Calls without a :attr:`PlannedCall.prefix` (or cached) are left out.
    prices : PriceTable

    Returns
    -------
    DataFrame
        One row per (model, template): ``model``, ``template`` (its id), ``prefix_preview``
        (the prefix's last 60 characters), ``prefix_chars``, ``prefix_tokens`` (counted
        offline like prompts, the per-message overhead included, the reply priming not),
        ``calls`` (uncached calls sharing it), ``cacheable_tokens`` (:func:`cacheable_tokens`),
        ``cached_input_price`` (bool: the model has a ``cached_input`` price; when False the
        saving is 0: cached tokens are priced as input), ``saving_usd`` (US dollars, an upper
        bound: every call after the first reads the cacheable tokens from the cache at the
        cached-input price instead of the input price; NaN when the model has no price).

    References
    ----------
    .. [1] OpenAI, "Prompt caching" guide (prefix match, 1,024-token minimum, 128-token
       increments, cache cleared after minutes of inactivity: the saving is "up to").
    """
    groups: dict[tuple[str, str], list[PlannedCall]] = {}
    for c in calls:
        if c.prefix and not c.cached:
            groups.setdefault((c.model, c.template), []).append(c)
    rows = []
    for (model, template), members in sorted(groups.items()):
        prefix = members[0].prefix
        n_tokens = count_message_tokens(prefix, model)[0] - _REPLY_PRIMING
        text = "\n".join(str(m.get("content") or "") for m in prefix)
        usable = cacheable_tokens(n_tokens)
        price = prices.price(model)
        if price is None:
            saving = math.nan
        else:
            per_token = price.cost(1, 0) - price.cost(1, 0, 1)
            saving = (len(members) - 1) * usable * per_token
        has_rate = prices.has_cached_input_price(model)
        preview = text if len(text) <= 60 else "..." + text[-57:]
        rows.append(
            (model, template, preview, len(text), n_tokens, len(members), usable, has_rate, saving)
        )
    return _prefix_frame(rows)


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
    return CostEstimate(frame, total, prices.describe(), all_notes, shared_prefixes(calls, prices))


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
            "copy of ragnb/llm/prices.yaml and pass it as prices="
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
