"""Prices of models: one dated table for every cost ragnb reports, and its one reader.

The table shipped in ``ragnb/llm/prices.yaml`` (:data:`PRICES_PATH`) holds US dollars per 1M input
and output tokens of the chat models (OpenAI's list prices, transcribed by hand), the OpenAI
embedding models and the Voyage rerankers (as Dallaire quotes them), each with the date and source
of its price, and the price per hour of the machine running local stages. The cost ledger
(:mod:`ragnb.llm.ledger`), the rerankers (:mod:`ragnb.rerank`) and the CLQ cost model
(:mod:`ragnb.studies.clq.cost`) all read it through :class:`PriceTable`. Copy and edit it, and pass
its path. A model with no price is never costed as 0: its cost is missing (NaN).

References
----------
.. [1] OpenAI API pricing page (https://openai.com/api/pricing/), as of 2025-08-07.
.. [2] Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and
   Cost-Latency-Quality Trade-offs" (arXiv 2511.09545), section 3.2.1 (rerank and generator
   prices).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragnb.errors import InputError

__all__ = ["PRICES_PATH", "ModelPrice", "PriceTable"]

#: The shipped price table (package data, found beside this file).
PRICES_PATH = Path(__file__).resolve().with_name("prices.yaml")


@dataclass(frozen=True)
class ModelPrice:
    """Price of one model.

    Attributes
    ----------
    model : str
        The price table entry that matched (the model or a prefix of it).
    input_usd_per_1m, output_usd_per_1m : float
        US dollars per 1,000,000 tokens.
    as_of : str
        Date of the price (ISO 8601).
    source : str
        Where the price comes from.
    cached_input_usd_per_1m : float or None, default None
        US dollars per 1,000,000 input tokens served from the provider's prompt cache (the
        ``cached_input`` entry of the table); None when the table gives none: cached input
        tokens are then priced as input tokens.
    batch_discount : float in [0, 1], default 0.0
        The share of the price taken off answers of the provider's batch API (OpenAI: 0.5,
        half price); 0 when the table gives none.
    """

    model: str
    input_usd_per_1m: float
    output_usd_per_1m: float
    as_of: str
    source: str
    cached_input_usd_per_1m: float | None = None
    batch_discount: float = 0.0

    def cost(
        self,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        *,
        batch: bool = False,
    ) -> float:
        """Cost in US dollars of ``input_tokens`` and ``output_tokens``.

        Parameters
        ----------
        input_tokens, output_tokens : int
            The answer's ``usage.prompt_tokens`` and ``usage.completion_tokens``.
        cached_input_tokens : int, default 0
            The part of ``input_tokens`` the provider read from its prompt cache
            (``usage.prompt_tokens_details.cached_tokens``), priced at
            :attr:`cached_input_usd_per_1m` (at the input price when the model has none);
            clipped to ``[0, input_tokens]``.
        batch : bool, default False
            An answer of the provider's batch API: the whole cost is multiplied by
            ``1 - batch_discount``.

        References
        ----------
        .. [1] OpenAI, "Prompt caching" guide and API pricing page ("Cached input"): cached
           prompt tokens are reported in ``usage.prompt_tokens_details.cached_tokens`` and
           billed at the cached-input price.
        .. [2] OpenAI, "Batch API" guide: batch requests cost 50% less than the same requests
           sent one by one.

        Examples
        --------
        >>> ModelPrice("m", 2.5, 10.0, "2025-08-07", "").cost(1000, 100)
        0.0035
        >>> ModelPrice("m", 2.5, 10.0, "2025-08-07", "", 1.25).cost(1000, 100, 800)
        0.0025
        >>> ModelPrice("m", 2.5, 10.0, "2025-08-07", "", None, 0.5).cost(1000, 100, batch=True)
        0.00175
        """
        cached = min(max(int(cached_input_tokens), 0), int(input_tokens))
        rate = self.input_usd_per_1m
        cached_rate = rate if self.cached_input_usd_per_1m is None else self.cached_input_usd_per_1m
        fresh = input_tokens - cached
        usd = (fresh * rate + cached * cached_rate + output_tokens * self.output_usd_per_1m) / 1e6
        return usd * (1.0 - self.batch_discount) if batch else usd


class PriceTable:
    """Model -> price per 1M tokens, dated, from a YAML file.

    Parameters
    ----------
    prices : dict of str to ModelPrice
    as_of, source : str
        Defaults of the table.
    path : str, optional
        The file it was read from.
    machine_usd_per_hour : float, optional
        US dollars per hour of the machine running local stages (the CLQ cost model prices
        local compute with it); None when the table gives none.

    See Also
    --------
    PriceTable.load : read a table (the shipped one by default).
    """

    def __init__(
        self,
        prices: Mapping[str, ModelPrice],
        as_of: str,
        source: str,
        path: str | None = None,
        machine_usd_per_hour: float | None = None,
    ) -> None:
        self.prices = dict(prices)
        self.as_of = as_of
        self.source = source
        self.path = path
        self.machine_usd_per_hour = machine_usd_per_hour

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None) -> PriceTable:
        """Read a price table; default: ``ragnb/llm/prices.yaml`` shipped with ragnb.

        The file holds ``as_of``, ``source``, optionally ``machine_usd_per_hour``, and
        ``models: {name: {input: x, output: y}}`` (US dollars per 1M tokens); an entry may
        override ``as_of`` and ``source``, and may give ``cached_input`` (US dollars per 1M
        input tokens read from the provider's prompt cache). ``batch_discount`` (the share of
        the price taken off batch API answers, in [0, 1]; default 0) may be given for the
        whole table and overridden per entry.

        Raises
        ------
        InputError
            On malformed YAML, a missing ``models`` mapping, or a price that is not a
            non-negative number (naming the file and model), ``cached_input`` included, or a
            ``batch_discount`` outside [0, 1].
        """
        from ragnb.io.files import read_yaml  # here, not at the top: ragnb.io loads pandas

        where = "ragnb/llm/prices.yaml" if path is None else str(path)
        data = read_yaml(PRICES_PATH if path is None else path, name=where)
        return cls.from_dict(data, path=where)

    @classmethod
    def from_dict(cls, data: Any, path: str | None = None) -> PriceTable:
        """Build a table from the mapping a price file holds (see :meth:`load`)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("models"), Mapping):
            raise InputError("a price table needs a 'models' mapping", path=path)
        as_of = str(data.get("as_of", "unknown"))
        discount = _discount(data.get("batch_discount", 0.0), "batch_discount", path)
        source = str(data.get("source", "unknown")).strip()
        prices = {}
        for name, entry in data["models"].items():
            if not isinstance(entry, Mapping):
                raise InputError(f"model {name!r}: expected {{input: x, output: y}}", path=path)
            values = []
            for part in ("input", "output"):
                v = entry.get(part)
                if isinstance(v, bool) or not isinstance(v, int | float) or not v >= 0:
                    raise InputError(
                        f"model {name!r}: {part} price must be a number >= 0 (USD per 1M "
                        f"tokens), got {v!r}",
                        path=path,
                    )
                values.append(float(v))
            cached = entry.get("cached_input")
            if cached is not None and (
                isinstance(cached, bool) or not isinstance(cached, int | float) or not cached >= 0
            ):
                raise InputError(
                    f"model {name!r}: cached_input price must be a number >= 0 (USD per 1M "
                    f"tokens), got {cached!r}",
                    path=path,
                )
            prices[str(name)] = ModelPrice(
                str(name),
                values[0],
                values[1],
                str(entry.get("as_of", as_of)),
                str(entry.get("source", source)).strip(),
                None if cached is None else float(cached),
                _discount(
                    entry.get("batch_discount", discount), f"model {name!r}: batch_discount", path
                ),
            )
        machine = data.get("machine_usd_per_hour")
        if machine is not None and (
            isinstance(machine, bool) or not isinstance(machine, int | float) or machine < 0
        ):
            raise InputError(
                f"machine_usd_per_hour must be a number >= 0, got {machine!r}", path=path
            )
        return cls(prices, as_of, source, path, None if machine is None else float(machine))

    def price(self, model: str) -> ModelPrice | None:
        """The price of ``model``: exact entry, else the longest entry ``e`` such that the model
        starts with ``e + "-"``; None when no entry matches.

        Examples
        --------
        >>> t = PriceTable.load()
        >>> t.price("gpt-4o-2024-08-06").model, t.price("gpt-4o-mini").model
        ('gpt-4o', 'gpt-4o-mini')
        >>> t.price("my-local-llama") is None
        True
        """
        if model in self.prices:
            return self.prices[model]
        best = None
        for name in self.prices:
            if model.startswith(name + "-") and (best is None or len(name) > len(best)):
                best = name
        return None if best is None else self.prices[best]

    def cost(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        *,
        batch: bool = False,
    ) -> float:
        """US dollars (see :meth:`ModelPrice.cost`; ``batch``: an answer of the provider's batch
        API, at its discount), or NaN when ``model`` has no price."""
        p = self.price(model)
        if p is None:
            return math.nan
        return p.cost(input_tokens, output_tokens, cached_input_tokens, batch=batch)

    def has_cached_input_price(self, model: str) -> bool:
        """True when ``model`` has a price and a ``cached_input`` price (False: its cached input
        tokens are priced as input tokens, or it has no price at all).

        Examples
        --------
        >>> t = PriceTable.load()
        >>> t.has_cached_input_price("gpt-4o-mini"), t.has_cached_input_price("gpt-4")
        (True, False)
        """
        p = self.price(model)
        return p is not None and p.cached_input_usd_per_1m is not None

    def describe(self) -> dict[str, Any]:
        """Date, source and file of the table, for manifests."""
        return {"as_of": self.as_of, "source": self.source, "path": self.path}


def _discount(value: Any, where: str, path: str | None) -> float:
    """A ``batch_discount`` of a price table, checked to be a number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InputError(
            f"{where} must be a number in [0, 1] (the share of the price taken off batch "
            f"answers), got {value!r}",
            path=path,
        )
    return float(value)
