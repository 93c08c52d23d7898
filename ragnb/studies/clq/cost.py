"""Cost per 1,000 queries of a retrieval configuration: API tokens, local compute, generator input.

Four parts, each in US dollars per 1,000 queries:

- **API tokens**: query embedding with an API embedder (``openai:<model>``), and token-metered
  reranking: ``K x T_cand`` tokens per query with ``T_cand`` = query + candidate tokens
  (Dallaire section 3.2.1: ``Cost_rerank = K x T_cand / 1000 x price_1k``). Tokens are counted
  offline with :func:`ragnb.llm.ledger.count_tokens`; an LLM reranker's own usage (input and output
  tokens) is used when it reports one.
- **Query rewriting** by an LLM (the sweep's ``rewriters`` axis, Dallaire section 4.1): the
  rewriter's input and output tokens per query (its usage as reported, the original answer's
  when cached) times its model's prices.
- **Local compute**: the measured seconds of the embed + search + rerank path, times a
  user-set machine price per hour, so local configurations are not free.
- **Generator input**: the ``generator_k`` chunks sent to the generator times their mean token
  length times the generator's input price (Dallaire's GPT-5 table, section 3.2.1).

Prices come from ragnb's one dated, editable YAML table (``ragnb/llm/prices.yaml``, read by
:class:`ragnb.llm.prices.PriceTable`). A model missing from the table makes its part NaN, never 0.

References
----------
Dallaire, arXiv:2511.09545, section 3.2.1 (cost formulas and the rerank and generator tables).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ragnb.core.validation import check_int_at_least
from ragnb.errors import InputError
from ragnb.llm.ledger import count_tokens
from ragnb.llm.prices import PRICES_PATH, PriceTable

__all__ = [
    "PRICES_PATH",
    "CostModel",
    "api_model",
    "count_texts",
    "generator_cost_table",
    "load_prices",
    "rerank_cost_table",
]

TOKENIZER = "gpt-5"  # o200k_base: the offline token count of every text


def load_prices(path: str | os.PathLike[str] | None = None) -> tuple[PriceTable, float | None]:
    """Read a price table and its machine price (:meth:`ragnb.llm.prices.PriceTable.load`).

    Parameters
    ----------
    path : str or PathLike, optional
        A YAML file in the format of ``ragnb/llm/prices.yaml``; default that file, the one price
        table of ragnb.

    Returns
    -------
    prices : PriceTable
        US dollars per 1M tokens by model, dated.
    machine_usd_per_hour : float or None
        The file's ``machine_usd_per_hour`` (None when absent).

    Raises
    ------
    InputError
        Malformed YAML, a missing ``models`` mapping, a negative or non-numeric price.
    """
    table = PriceTable.load(path)
    return table, table.machine_usd_per_hour


def api_model(spec: str) -> str | None:
    """The priced model behind an embedder or reranker spec, None for local ones.

    Examples
    --------
    >>> api_model("openai:text-embedding-3-small"), api_model("http:rerank-2.5")
    ('text-embedding-3-small', 'rerank-2.5')
    >>> api_model("llm:gpt-5-mini"), api_model("rescore:wordllama"), api_model("wordllama")
    ('gpt-5-mini', None, None)
    """
    for prefix in ("openai:", "http:", "llm:"):
        if spec.startswith(prefix):
            return spec.removeprefix(prefix)
    return None


def count_texts(texts: Iterable[str], model: str = TOKENIZER) -> list[int]:
    """Offline token count of each text (:func:`ragnb.llm.ledger.count_tokens`)."""
    return [count_tokens(t, model)[0] for t in texts]


def _price(prices: PriceTable, model: str | None, part: str = "input") -> float:
    """US dollars per 1M tokens, NaN when unpriced."""
    if model is None:
        return 0.0
    p = prices.price(model)
    if p is None:
        return math.nan
    return p.input_usd_per_1m if part == "input" else p.output_usd_per_1m


@dataclass
class CostModel:
    """Prices a configuration's measured tokens and seconds, per 1,000 queries.

    Parameters
    ----------
    prices : PriceTable
        Default: the shipped ``ragnb/llm/prices.yaml``.
    machine_usd_per_hour : float, optional
        Price of the machine running the local stages, US dollars per hour; default the price
        file's ``machine_usd_per_hour``.
    generator : str
        The generator model whose input price applies to the final context.
    generator_k : int
        Chunks sent to the generator per query.

    Raises
    ------
    InputError
        On a negative machine price, or a ``generator_k`` that is not an integer >= 1.
    """

    prices: PriceTable | None = None
    machine_usd_per_hour: float | None = None
    generator: str = "gpt-5"
    generator_k: int = 10
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.prices is None:
            self.prices, machine = load_prices()
            if self.machine_usd_per_hour is None:
                self.machine_usd_per_hour = machine
        if self.machine_usd_per_hour is None:
            self.machine_usd_per_hour = 0.0
            self.notes.append("no machine price set: local compute is priced at $0")
        if self.machine_usd_per_hour < 0:
            raise InputError(
                f"machine_usd_per_hour must be >= 0, got {self.machine_usd_per_hour}",
                column="machine_usd_per_hour",
            )
        self.generator_k = check_int_at_least(
            self.generator_k, "generator_k", 1, column="generator_k"
        )

    def per_1k(
        self,
        *,
        embedder: str,
        reranker: str,
        query_tokens: float,
        rerank_input_tokens: float,
        rerank_output_tokens: float,
        local_seconds: float,
        generator_tokens: float,
        rewriter_model: str | None = None,
        rewrite_input_tokens: float = 0.0,
        rewrite_output_tokens: float = 0.0,
    ) -> dict[str, float]:
        """Cost of 1,000 queries, by part.

        Parameters
        ----------
        embedder, reranker : str
            Specs; ``openai:``, ``http:`` and ``llm:`` ones are priced by their model.
        query_tokens : float
            Mean tokens per query (embedding input).
        rerank_input_tokens, rerank_output_tokens : float
            Mean reranker tokens per query (input: query + candidate per candidate).
        local_seconds : float
            Mean seconds per query of the timed path (rewrite + embed + search + rerank).
        generator_tokens : float
            Mean generator input tokens per query (the top ``generator_k`` chunks).
        rewriter_model : str, optional
            The LLM that rewrote the queries (a price-table model); None: no LLM rewriting.
        rewrite_input_tokens, rewrite_output_tokens : float
            Mean rewriter tokens per query.

        Returns
        -------
        dict
            ``cost_embed_usd``, ``cost_rewrite_usd``, ``cost_rerank_usd``, ``cost_local_usd``,
            ``cost_retrieval_usd`` (the four above), ``cost_generator_usd``,
            ``cost_usd`` (all), US dollars per 1,000 queries; NaN for an unpriced model.

        Examples
        --------
        >>> from ragnb.llm.ledger import PriceTable
        >>> t = PriceTable.from_dict({"models": {"rerank-2.5": {"input": 0.05, "output": 0},
        ...                                      "gpt-5": {"input": 1.25, "output": 10}}})
        >>> c = CostModel(t, machine_usd_per_hour=3.6, generator="gpt-5", generator_k=10)
        >>> out = c.per_1k(embedder="wordllama", reranker="http:rerank-2.5", query_tokens=10,
        ...                rerank_input_tokens=50 * 500, rerank_output_tokens=0,
        ...                local_seconds=0.1, generator_tokens=10 * 500)
        >>> round(out["cost_rerank_usd"], 4), round(out["cost_local_usd"], 4)
        (1.25, 0.1)
        >>> round(out["cost_generator_usd"], 4), round(out["cost_usd"], 4)
        (6.25, 7.6)
        >>> t = PriceTable.from_dict({"models": {"gpt-5-nano": {"input": 0.05, "output": 0.4}}})
        >>> c = CostModel(t, machine_usd_per_hour=0.0)
        >>> out = c.per_1k(embedder="wordllama", reranker="none", query_tokens=10,
        ...                rerank_input_tokens=0, rerank_output_tokens=0, local_seconds=0.0,
        ...                generator_tokens=0, rewriter_model="gpt-5-nano",
        ...                rewrite_input_tokens=100, rewrite_output_tokens=25)
        >>> round(out["cost_rewrite_usd"], 4), round(out["cost_retrieval_usd"], 4)
        (0.015, 0.015)
        """
        prices = self.prices if self.prices is not None else load_prices()[0]
        machine = float(self.machine_usd_per_hour or 0.0)
        emb_model = api_model(embedder)
        rr_model = api_model(reranker)
        embed = query_tokens * _price(prices, emb_model) / 1e6 * 1000
        rerank = (
            (
                rerank_input_tokens * _price(prices, rr_model)
                + rerank_output_tokens * _price(prices, rr_model, "output")
            )
            / 1e6
            * 1000
        )
        rewrite = (
            (
                rewrite_input_tokens * _price(prices, rewriter_model)
                + rewrite_output_tokens * _price(prices, rewriter_model, "output")
            )
            / 1e6
            * 1000
        )
        local = local_seconds * machine / 3600 * 1000
        generator = generator_tokens * _price(prices, self.generator) / 1e6 * 1000
        retrieval = embed + rewrite + rerank + local
        return {
            "cost_embed_usd": embed,
            "cost_rewrite_usd": rewrite,
            "cost_rerank_usd": rerank,
            "cost_local_usd": local,
            "cost_retrieval_usd": retrieval,
            "cost_generator_usd": generator,
            "cost_usd": retrieval + generator,
        }

    def describe(self) -> dict[str, Any]:
        """The prices used, for provenance."""
        return {
            "prices_file": None if self.prices is None else self.prices.path,
            "as_of": None if self.prices is None else self.prices.as_of,
            "machine_usd_per_hour": self.machine_usd_per_hour,
            "generator": self.generator,
            "generator_k": self.generator_k,
            "notes": list(self.notes),
        }


def rerank_cost_table(
    ks: Sequence[int] = (50, 100, 150, 200),
    tokens_per_candidate: float = 500,
    models: Sequence[str] = ("rerank-2.5", "rerank-2.5-lite"),
    prices: PriceTable | None = None,
) -> pd.DataFrame:
    """Rerank cost per 1,000 queries against K: ``K x T_cand x 1000 x price / 1e6``.

    Parameters
    ----------
    ks : sequence of int
        Candidates per query.
    tokens_per_candidate : float
        ``T_cand`` (query + candidate); the paper assumes 500 (measured 513-516).
    models : sequence of str
        Entries of the price table.
    prices : PriceTable, optional
        Default the shipped table.

    Returns
    -------
    DataFrame
        ``K`` then one column per model, US dollars per 1,000 queries (NaN: unpriced).

    References
    ----------
    Dallaire, arXiv:2511.09545, section 3.2.1, "Cost per 1,000 queries" table.

    Examples
    --------
    >>> rerank_cost_table().round(2).to_dict("records")[0]
    {'K': 50, 'rerank-2.5': 1.25, 'rerank-2.5-lite': 0.5}
    """
    return _input_cost_table(ks, tokens_per_candidate, models, prices, token_column=False)


def generator_cost_table(
    ks: Sequence[int] = (10, 20, 30),
    tokens_per_chunk: float = 500,
    models: Sequence[str] = ("gpt-5", "gpt-5-mini", "gpt-5-nano"),
    prices: PriceTable | None = None,
) -> pd.DataFrame:
    """Generator input cost per 1,000 queries against the chunks sent per query.

    Parameters
    ----------
    ks : sequence of int
        Chunks per query.
    tokens_per_chunk : float
        Mean tokens per chunk (the paper: 500; the sweep measures it per chunker).
    models : sequence of str
    prices : PriceTable, optional

    Returns
    -------
    DataFrame
        ``K``, ``input_tokens`` (per 1,000 queries) and one column per model (US dollars).

    References
    ----------
    Dallaire, arXiv:2511.09545, section 3.2.1, "Final inference input cost per 1,000 queries".

    Examples
    --------
    >>> generator_cost_table().round(2).to_dict("records")[0]
    {'K': 10, 'input_tokens': 5000000.0, 'gpt-5': 6.25, 'gpt-5-mini': 1.25, 'gpt-5-nano': 0.25}
    """
    return _input_cost_table(ks, tokens_per_chunk, models, prices, token_column=True)


def _input_cost_table(
    ks: Sequence[int],
    tokens_per_item: float,
    models: Sequence[str],
    prices: PriceTable | None,
    *,
    token_column: bool,
) -> pd.DataFrame:
    """``K`` (items per query), optionally ``input_tokens`` per 1,000 queries, and the input
    cost of those tokens per model: ``K x tokens_per_item x 1000 x price / 1e6`` US dollars."""
    prices = prices or load_prices()[0]
    rows = []
    for k in ks:
        tokens = float(k) * tokens_per_item * 1000
        row: dict[str, Any] = (
            {"K": int(k), "input_tokens": tokens} if token_column else {"K": int(k)}
        )
        for m in models:
            row[m] = tokens * _price(prices, m) / 1e6
        rows.append(row)
    return pd.DataFrame(rows)
