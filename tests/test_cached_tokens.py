"""Cached-token pricing: the price table's cached-input prices, the ledger's cached input tokens
(read from the answers' usage, old ledgers still read), the cost tables and the dry-run
estimate's shared prompt prefix."""

from __future__ import annotations

import json
import math

import pytest
from openai_server import PromptCache

from ragnb.core.cache import Cache
from ragnb.errors import InputError
from ragnb.judge import OpenAIJudge
from ragnb.llm import PromptTemplate
from ragnb.llm.ledger import (
    Ledger,
    PriceTable,
    cacheable_tokens,
    count_message_tokens,
    estimate,
)
from ragnb.studies.golden.study import estimate_markdown

PRICES = PriceTable.from_dict(
    {
        "models": {
            "with-cache": {"input": 2.0, "cached_input": 0.5, "output": 8.0},
            "no-cache": {"input": 2.0, "output": 8.0},
        }
    }
)


def rows(n: int) -> list[dict[str, str]]:
    return [
        {"query_id": "q", "doc_id": f"d{i}", "query": "what is BM25?", "passage": f"text {i}"}
        for i in range(n)
    ]


# ----------------------------------------------------------------------------- prices


def test_cached_input_price_is_read_and_applied():
    p = PRICES.price("with-cache")
    assert p.cached_input_usd_per_1m == 0.5
    # 1,000 input tokens of which 600 cached, 100 output: 400*2 + 600*0.5 + 100*8 = 1900 / 1e6
    assert PRICES.cost("with-cache", 1000, 100, 600) == pytest.approx(0.0019)
    # no cached-input price: cached tokens are priced as input
    assert PRICES.cost("no-cache", 1000, 100, 600) == pytest.approx(
        PRICES.cost("no-cache", 1000, 100)
    )
    assert PRICES.cost("no-cache", 1000, 100, 600) == pytest.approx(0.0028)
    # more cached than prompt tokens is clipped to the prompt
    assert PRICES.cost("with-cache", 100, 0, 900) == pytest.approx(100 * 0.5 / 1e6)
    assert PRICES.has_cached_input_price("with-cache")
    assert not PRICES.has_cached_input_price("no-cache")
    assert not PRICES.has_cached_input_price("unknown")


def test_shipped_table_has_cached_input_prices():
    t = PriceTable.load()
    assert t.price("gpt-4o-mini").cached_input_usd_per_1m == 0.075
    assert t.price("gpt-4o-2024-08-06").cached_input_usd_per_1m == 1.25
    assert t.price("gpt-5").cached_input_usd_per_1m == 0.125
    assert t.price("gpt-4").cached_input_usd_per_1m is None
    for name, price in t.prices.items():
        if price.cached_input_usd_per_1m is not None:
            assert price.cached_input_usd_per_1m < price.input_usd_per_1m, name


@pytest.mark.parametrize("bad", [-1, "0.5", True])
def test_bad_cached_input_price_names_the_model(bad):
    with pytest.raises(InputError, match=r"model 'm': cached_input price must be a number"):
        PriceTable.from_dict({"models": {"m": {"input": 1, "output": 1, "cached_input": bad}}})


# ----------------------------------------------------------------------------- the ledger


def test_ledger_records_and_prices_cached_input_tokens(tmp_path):
    led = Ledger(tmp_path / "ledger.jsonl", prices=PRICES)
    ok = {"stage": "judge", "attempt": 1, "status": "ok", "output_tokens": 10}
    e = led.record(**ok, model="with-cache", item="q/d1", key="k1", input_tokens=1000,
                   cached_input_tokens=800)  # fmt: skip
    assert e["cached_input_tokens"] == 800
    assert e["cost_usd"] == pytest.approx((200 * 2.0 + 800 * 0.5 + 10 * 8.0) / 1e6)
    led.record(**ok, model="no-cache", item="q/d2", key="k2", input_tokens=1000,
               cached_input_tokens=300)  # fmt: skip
    led.close()
    line = json.loads((tmp_path / "ledger.jsonl").read_text().splitlines()[0])
    assert line["cached_input_tokens"] == 800
    t = Ledger(tmp_path / "ledger.jsonl", prices=PRICES).totals(by="model")
    t = t.set_index("model")
    assert t.loc["with-cache", "cached_input_tokens"] == 800
    assert t.loc["with-cache", "cached_at_input_price"] == 0
    assert t.loc["no-cache", "cached_input_tokens"] == 300
    assert t.loc["no-cache", "cached_at_input_price"] == 300
    assert t.loc["no-cache", "cost_usd"] == pytest.approx((1000 * 2.0 + 10 * 8.0) / 1e6)


def test_ledger_written_before_cached_tokens_still_reads(tmp_path):
    old = {
        "ts": "2025-01-01T00:00:00.000Z", "run_id": "r0", "stage": "judge", "judge_id": "",
        "model": "with-cache", "kind": "grade", "item": "q/d0", "key": "k0", "attempt": 1,
        "status": "ok", "input_tokens": 50, "output_tokens": 2, "cached": False,
        "repeated": False, "cost_usd": 0.000116, "request_id": None, "usage_estimated": False,
    }  # fmt: skip
    path = tmp_path / "ledger.jsonl"
    path.write_text(json.dumps(old) + "\n")
    led = Ledger(path, prices=PRICES)
    assert led.frame()["cached_input_tokens"].tolist() == [0]
    assert Ledger.read(path)["cached_input_tokens"].dtype == "int64"
    total = led.totals().iloc[0]
    assert (total["input_tokens"], total["cached_input_tokens"]) == (50, 0)
    assert total["cost_usd"] == pytest.approx(0.000116)
    assert "prompt cache" not in led.cost_note()


def judge_on(server, tmp_path, model, prompt="utility-rubric", prices=PRICES):
    return OpenAIJudge(
        model,
        prompt=prompt,
        base_url=server.base_url,
        api_key="sk-test-secret",
        cache=Cache(tmp_path / "cache"),
        ledger=Ledger(tmp_path / f"{model}.jsonl", prices=prices),
        progress=False,
        concurrency=1,
    )


def test_judge_answers_with_cached_tokens_reach_the_ledger(openai_server, tmp_path):
    openai_server.chat.handler = PromptCache('{"grade": 3}')
    judge = judge_on(openai_server, tmp_path, "with-cache")
    out = judge.grade_many(rows(3))
    assert out["grade"].tolist() == [3, 3, 3]
    bodies = openai_server.bodies("/v1/chat/completions")
    assert len(bodies) == 3
    entries = judge.ledger.entries
    cached = [e["cached_input_tokens"] for e in entries]
    # the first request finds nothing cached; the next ones share the prompt up to the passage
    assert cached[0] == 0 and cached[1] > 0 and cached[1] == cached[2]
    assert all(e["cached_input_tokens"] < e["input_tokens"] for e in entries)
    for e in entries:
        fresh = e["input_tokens"] - e["cached_input_tokens"]
        expected = (fresh * 2.0 + e["cached_input_tokens"] * 0.5 + e["output_tokens"] * 8.0) / 1e6
        assert e["cost_usd"] == pytest.approx(expected)
    total = judge.ledger.totals().iloc[0]
    assert total["cached_input_tokens"] == sum(cached)
    assert total["cached_at_input_price"] == 0
    note = judge.ledger.cost_note()
    assert f"{sum(cached)} of {total['input_tokens']} input tokens read from the provider's " \
        "prompt cache (priced at the cached-input rate)" in note  # fmt: skip
    # a re-run is served from our own cache: no request, no cached input billed
    judge.grade_many(rows(3))
    assert len(openai_server.bodies("/v1/chat/completions")) == 3
    assert judge.ledger.totals().iloc[0]["cached_input_tokens"] == sum(cached)
    assert "sk-test-secret" not in (tmp_path / "with-cache.jsonl").read_text()


def test_a_model_without_cached_price_is_priced_as_input_and_the_table_says_so(
    openai_server, tmp_path
):
    openai_server.chat.handler = PromptCache('{"grade": 2}')
    judge = judge_on(openai_server, tmp_path, "no-cache")
    judge.grade_many(rows(2))
    total = judge.ledger.totals().iloc[0]
    assert total["cached_input_tokens"] > 0
    assert total["cached_at_input_price"] == total["cached_input_tokens"]
    assert total["cost_usd"] == pytest.approx(
        (total["input_tokens"] * 2.0 + total["output_tokens"] * 8.0) / 1e6
    )
    assert "(priced as input: no cached-input price for the model)" in judge.ledger.cost_note()


# ----------------------------------------------------------------------------- the estimate


def test_template_static_prefix_stops_at_the_first_field():
    t = PromptTemplate("t", "en", "grade", "integer", "Grade {{0-1}}: {passage} for {query}.",
                       system="Be strict.", scale=(0, 1))  # fmt: skip
    assert t.static_prefix() == [
        {"role": "system", "content": "Be strict."},
        {"role": "user", "content": "Grade {0-1}: "},
    ]
    fielded = PromptTemplate("t", "en", "grade", "integer", "{passage}", system="On {query}:",
                             scale=(0, 1))  # fmt: skip
    assert fielded.static_prefix() == [{"role": "system", "content": "On "}]


def test_estimate_names_the_shared_prefix_and_its_tokens(tmp_path):
    judge = OpenAIJudge("gpt-4o-mini", cache=Cache(tmp_path), ledger=Ledger(), progress=False)
    est = estimate(judge, rows(4))
    assert len(est.prefixes) == 1
    row = est.prefixes.iloc[0]
    prefix = judge.prompt.static_prefix()
    assert row["template"] == judge.prompt.id and row["calls"] == 4
    assert row["prefix_tokens"] == count_message_tokens(prefix, "gpt-4o-mini")[0] - 3
    assert row["prefix_tokens"] < 1024 and row["cacheable_tokens"] == 0
    assert row["saving_usd"] == 0.0
    note = est.prefix_note()
    assert f"4 calls of {judge.prompt.id} (gpt-4o-mini) share a prefix of" in note
    assert "shorter than the 1024 tokens" in note
    assert est.summary()["shared_prefixes"][0]["prefix_tokens"] == row["prefix_tokens"]
    assert "shared prompt prefix:" in estimate_markdown(est, None)


def test_a_long_shared_prefix_shows_what_a_prompt_cache_could_save(tmp_path):
    rubric = "Grade the passage for the query on a scale of 0 to 1. " * 120
    long = PromptTemplate("long", "en", "grade", "integer", "Query: {query}\nPassage: {passage}",
                          system=rubric, scale=(0, 1))  # fmt: skip
    judge = OpenAIJudge(
        "gpt-4o-mini", prompt=long, cache=Cache(tmp_path), ledger=Ledger(), progress=False
    )
    est = estimate(judge, rows(5))
    row = est.prefixes.iloc[0]
    assert row["prefix_tokens"] >= 1024
    assert row["cacheable_tokens"] == cacheable_tokens(row["prefix_tokens"])
    assert row["cacheable_tokens"] % 128 == 0 and row["cacheable_tokens"] <= row["prefix_tokens"]
    # four calls after the first read the cacheable tokens at 0.075 instead of 0.15 per 1M
    assert row["saving_usd"] == pytest.approx(4 * row["cacheable_tokens"] * (0.15 - 0.075) / 1e6)
    assert "up to $" in est.prefix_note()
    # a model without a cached-input price saves nothing, and the note says why
    gpt4 = OpenAIJudge("gpt-4", prompt=long, cache=Cache(tmp_path), ledger=Ledger(), progress=False)
    row4 = estimate(gpt4, rows(5)).prefixes.iloc[0]
    assert not row4["cached_input_price"] and row4["saving_usd"] == 0.0
    assert "no cached-input price" in estimate(gpt4, rows(5)).prefix_note()
    unpriced = OpenAIJudge("my-llm", prompt=long, cache=Cache(tmp_path), ledger=Ledger(),
                           progress=False)  # fmt: skip
    assert math.isnan(estimate(unpriced, rows(2)).prefixes.iloc[0]["saving_usd"])
