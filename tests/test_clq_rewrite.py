"""Query rewriting as a CLQ sweep axis (Dallaire section 4.1: with and without rewriting): the
axis enumerates inside its scope, configurations without rewriting keep their ids, the
rule-based denoiser's rules, an LLM rewriter's latency and cost in the totals (scripted server;
a second run makes no call), and a sweep folder resumes when the axis is added."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from ragnb.errors import InputError
from ragnb.io.files import read_beir
from ragnb.rewrite import denoise_query
from ragnb.studies.clq.grid import SweepGrid
from ragnb.studies.clq.sweep import cap_dataset, run_sweep

PYDOCS = Path(__file__).resolve().parents[1] / "data" / "pydocs"
BASE = dict(
    embedders=["wordllama"],
    dims=[0, 64],
    chunkers=["document"],
    indexes=["flat", "hnsw"],
    pool_ks=[20],
    rerankers=["none"],
    modes=["dense", "bm25"],
)


@pytest.fixture(scope="module")
def small():
    ds, _ = cap_dataset(read_beir(PYDOCS), max_docs=150, max_queries=8, seed=3)
    return ds


def test_rewriting_axis_enumerates_in_scope_and_keeps_the_ids_without_rewriting():
    plain = SweepGrid(**BASE).expand()
    assert len(plain) == 5  # 2 dims x 2 indexes dense, 1 BM25
    scope = {"dim": [0], "index": ["flat"]}
    grid = SweepGrid(**BASE, rewriters=["none", "denoise", "llm:m"], rewrite_scope=scope)
    configs = grid.expand()
    none = [c for c in configs if not c.rewriter]
    assert [c.config_id for c in none] == [c.config_id for c in plain]
    rewritten = [c for c in configs if c.rewriter]
    # in scope: the dense full-dimension flat configuration and the BM25 one, per rewriter
    assert sorted((c.rewriter, c.mode) for c in rewritten) == [
        ("denoise", "bm25"),
        ("denoise", "dense"),
        ("llm:m", "bm25"),
        ("llm:m", "dense"),
    ]
    assert all(c.dim == 0 and c.index in ("flat", "-") for c in rewritten)
    assert len({c.config_id for c in configs}) == len(configs) == 9
    assert all(c.label.endswith(f"| rewrite={c.rewriter}") for c in rewritten)
    # unscoped: every configuration once per rewriter
    assert len(SweepGrid(**BASE, rewriters=["none", "denoise"]).expand()) == 10
    assert SweepGrid.from_dict(grid.to_dict()).expand() == configs
    with pytest.raises(InputError, match="unknown value 'gpt'"):
        SweepGrid(**BASE, rewriters=["gpt"])
    with pytest.raises(InputError, match=r"unknown field\(s\) \['colour'\]"):
        SweepGrid(**BASE, rewriters=["denoise"], rewrite_scope={"colour": ["red"]})


def test_denoiser_strips_filler_punctuation_and_stop_phrases():
    noisy = "Hello! Sorry to bother you. Um, could you tell me how HNSW works?? Thanks in advance"
    assert denoise_query(noisy) == "how hnsw works"
    # words, numbers and intra-word punctuation survive; a greeting without punctuation is a word
    assert denoise_query("What's the e-mail limit: 1,000 or 2.5k?") == (
        "what's the e-mail limit 1,000 or 2.5k"
    )
    assert denoise_query("hello world program") == "hello world program"
    assert denoise_query("Why 🙏 asyncio… 😅") == "why asyncio"
    assert denoise_query("Ｆｕｌｌ－width ＣＡＳＥ") == "full-width case"  # NFKC
    assert denoise_query("Salut ! Petite question : euh, c'est quoi asyncio ? Merci", "fr") == (
        "c'est quoi asyncio"
    )
    # nothing would be left: the normalised query is kept
    assert denoise_query("  Thanks!! ") == "thanks!!"
    with pytest.raises(InputError, match="language"):
        denoise_query("x", language="de")


def _rewrite_answer(request):
    """The scripted LLM: answers "1. <the query, denoised>" after 30 ms."""
    from openai_server import ChatAnswer

    prompt = request.json["messages"][-1]["content"]
    query = re.search(r"Query:\n(.*?)\n\n", prompt, re.S).group(1)
    return ChatAnswer(f"1. {denoise_query(query)} reference", delay=0.03)


def test_llm_rewrite_latency_and_cost_join_the_totals(small, tmp_path, openai_server):
    from ragnb.llm import ChatClient
    from ragnb.studies.clq.cost import CostModel, load_prices

    prices, _ = load_prices(None)
    price = prices.price("gpt-5-nano")
    openai_server.chat.push(_rewrite_answer, times=100)
    cache = tmp_path / "judge-cache"

    def judge():
        return ChatClient(
            "gpt-5-nano",
            base_url=openai_server.base_url,
            api_key="test",
            cache_dir=cache,
            progress=False,
            concurrency=1,
        )

    grid = SweepGrid(
        **{**BASE, "dims": [0], "indexes": ["flat"]}, rewriters=["none", "llm:gpt-5-nano"]
    )
    kwargs = dict(cache_dir=str(tmp_path / "emb"), cost=CostModel(prices, machine_usd_per_hour=0.0))
    out = tmp_path / "sweep"
    first = run_sweep(grid, small, out, rewrite_judge=judge(), **kwargs)
    n_q = len(small.judged_queries)
    bodies = openai_server.bodies("/v1/chat/completions")
    assert len(bodies) == n_q  # one call per query, shared by the dense and BM25 configurations
    r = first.results.set_index(["mode", "rewriter"])
    for mode in ("dense", "bm25"):
        llm, none = r.loc[(mode, "llm:gpt-5-nano")], r.loc[(mode, "")]
        assert none["rewrite_p50_ms"] == 0 and none["cost_rewrite_usd"] == 0
        assert llm["rewrite_p50_ms"] >= 30  # the server's delay is in the rewrite stage
        assert llm["latency_p50_ms"] >= llm["rewrite_p50_ms"]
        # the tokens the server counted, priced per 1,000 queries
        expected = (
            llm["rewrite_input_tokens"] * price.input_usd_per_1m
            + llm["rewrite_output_tokens"] * price.output_usd_per_1m
        ) / 1e3
        assert llm["rewrite_input_tokens"] > 20 and llm["rewrite_output_tokens"] >= 2
        assert llm["cost_rewrite_usd"] == pytest.approx(expected, rel=1e-9) and expected > 0
        parts = ["cost_embed_usd", "cost_rewrite_usd", "cost_rerank_usd", "cost_local_usd"]
        assert llm["cost_retrieval_usd"] == pytest.approx(sum(llm[p] for p in parts))
        assert llm["rewritten_share"] == 1.0
    per_query = first.per_query
    llm_id = r.loc[("bm25", "llm:gpt-5-nano"), "config_id"]
    assert (per_query.loc[per_query["config_id"] == llm_id, "total_ms"] >= 30).all()

    # the same folder measured again: the stored rewrites, no call, the same latency
    again = run_sweep(grid, small, out, rewrite_judge=judge(), resume=False, **kwargs)
    assert len(openai_server.bodies("/v1/chat/completions")) == n_q
    a = again.results.set_index(["mode", "rewriter"])
    key = ("dense", "llm:gpt-5-nano")
    assert a.loc[key, "rewrite_p50_ms"] == pytest.approx(r.loc[key, "rewrite_p50_ms"])
    # a new folder: the judge's cache answers, still no call, and a note says so
    other = run_sweep(grid, small, tmp_path / "other", rewrite_judge=judge(), **kwargs)
    assert len(openai_server.bodies("/v1/chat/completions")) == n_q
    assert any("came from the judge's cache" in n for n in other.notes)
    with pytest.raises(InputError, match="needs an LLM"):
        run_sweep(grid, small, tmp_path / "no-llm", **kwargs)


def test_sweep_folder_resumes_when_the_rewriting_axis_is_added(small, tmp_path):
    out, cache = tmp_path / "sweep", str(tmp_path / "emb")
    before = run_sweep(SweepGrid(**BASE), small, out, cache_dir=cache)
    assert before.n_evaluated == 5
    grid = SweepGrid(**BASE, rewriters=["none", "denoise"], rewrite_scope={"index": ["flat"]})
    after = run_sweep(grid, small, out, cache_dir=cache)
    assert after.n_skipped == 5 and after.n_evaluated == 3  # dense 2 dims + BM25, denoised
    assert set(after.evaluated_ids).isdisjoint(before.results["config_id"])
    res = after.results
    assert len(res) == 8 and set(res["rewriter"]) == {"", "denoise"}
    den = res[res["rewriter"] == "denoise"]
    assert (den["rewrite_p50_ms"] > 0).all() and (den["cost_rewrite_usd"] == 0).all()
    assert np.isfinite(den["quality"]).all()
    assert after.provenance["rewriters"] == {"denoise": "denoise"}


def test_notebook_default_rewrites_a_small_part_of_the_grid():
    """Notebook 04's default scope: one embedder, dimension, index and chunker at fixed K (every
    mode, reranker and K), so each rewriter adds 12 configurations to the 152 of the grid."""
    from dataclasses import replace

    from ragnb.studies.clq.study import ClqTradeoffsConfig

    config = ClqTradeoffsConfig()
    plain = replace(config, rewriters=["none"]).grid().expand()
    configs = config.grid(llm_model="m").expand()
    assert len(plain) == 152 and len(configs) == 152 + 2 * 12
    rewritten = [c for c in configs if c.rewriter]
    assert {c.rewriter for c in rewritten} == {"denoise", "llm:m"}
    assert {c.mode for c in rewritten} == {"dense", "bm25", "hybrid"}
    assert all(c.embedder in ("wordllama", "-") and c.chunker == "document" for c in rewritten)
    assert all(c.dim in (64, 0) and c.index in ("flat", "-") and not c.dynamic for c in rewritten)
    assert {c.dim for c in rewritten if c.dense} == {64}
    with pytest.raises(InputError, match="rewrite_scope"):
        ClqTradeoffsConfig(rewrite_scope=["dense"])
