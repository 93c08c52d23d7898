"""Conversational noise (ragnb.studies.diagnostics.noise): levels, determinism, the denoiser's
recovery rate on the generator's own output, the cosine view with hand-checkable embeddings, the
retrieval impact with a real BM25 on a few hundred passages, and a small real MiniLM run.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd
import pytest
from test_diagnostics import BagOfWordsEmbedder

from ragnb.errors import InputError
from ragnb.io.files import read_beir
from ragnb.retrievers.retrieve import BM25Retriever
from ragnb.studies.diagnostics import (
    LEVELS,
    add_noise,
    denoise,
    noise_retrieval_impact,
    noise_similarity,
    noise_summary,
    prompt_rewriter,
    recovered_share,
    reference_passages,
    subset_dataset,
)
from ragnb.studies.diagnostics.noise import PHRASES

CORE = "Can forests regulate the climate?"


@pytest.fixture(scope="module")
def pydocs():
    return read_beir("data/pydocs")


@pytest.fixture(scope="module")
def clean_queries(pydocs):
    return pydocs.queries["text"].tolist()


# ----------------------------------------------------------------------------- levels


def test_level_zero_is_the_clean_query():
    assert add_noise(CORE, 0) == CORE
    assert add_noise("  " + CORE + " ", 0, "fr") == CORE


@pytest.mark.parametrize("language", ["en", "fr"])
def test_levels_monotone_in_length_and_nested(clean_queries, language):
    for i, q in enumerate(clean_queries):
        texts = [add_noise(q, level, language, seed=i) for level in LEVELS]
        lengths = [len(t) for t in texts]
        assert lengths == sorted(lengths) and len(set(lengths)) == 5, texts
        assert all(q in t for t in texts)  # the core is kept verbatim
        # each level keeps the previous level's noise words (nested components)
        for lo, hi in zip(texts, texts[1:], strict=False):
            assert set(lo.split()) <= set(hi.split())


def test_level_components_match_the_documented_table():
    p = PHRASES["en"]
    texts = [add_noise(CORE, level, "en", seed=3) for level in LEVELS]
    assert any(texts[1].startswith(g + " ") for g in p["greeting"])
    assert any(f + " " + CORE in texts[2] for f in p["filler"])
    assert any(a in texts[3] for a in p["apology"]) and any(
        texts[3].endswith(c) for c in p["closing"]
    )
    assert any(d in texts[4] for d in p["digression"])
    assert sum(texts[4].count(e) for e in p["emoji"]) == 2
    assert not any(e in texts[3] for e in p["emoji"])


def test_noise_deterministic_under_seed():
    assert add_noise(CORE, 4, "en", seed=11) == add_noise(CORE, 4, "en", seed=11)
    variants = {add_noise(CORE, 4, "en", seed=s) for s in range(20)}
    assert len(variants) > 5
    fr = add_noise(CORE, 3, "fr", seed=11)
    assert any(g in fr for g in PHRASES["fr"]["greeting"])


def test_noise_validates():
    with pytest.raises(InputError, match="level"):
        add_noise(CORE, 5)
    with pytest.raises(InputError, match="level"):
        add_noise(CORE, True)
    with pytest.raises(InputError, match="language"):
        add_noise(CORE, 1, "de")


# ----------------------------------------------------------------------------- denoiser


@pytest.mark.parametrize("language", ["en", "fr"])
def test_denoiser_recovers_level_zero(clean_queries, language):
    total, restored = 0, 0
    failures = []
    for seed in range(3):
        for q in clean_queries:
            for level in LEVELS[1:]:
                noisy = add_noise(q, level, language, seed)
                total += 1
                if denoise(noisy, language) == q:
                    restored += 1
                else:
                    failures.append(noisy)
    assert restored / total >= 0.98, failures[:5]


@pytest.mark.parametrize("language", ["en", "fr"])
def test_denoiser_leaves_clean_queries_alone(clean_queries, language):
    assert [denoise(q, language) for q in clean_queries] == clean_queries


def test_denoiser_examples_from_the_paper():
    high = (
        "Hello! Sorry for the kinda random question. I'm on the train... "
        "could forests actually regulate the climate?"
    )
    assert denoise(high) == "could forests actually regulate the climate?"
    assert denoise("Hi! Quick question: " + CORE) == CORE
    assert (
        denoise("Bonjour ! Petite question : Les forêts régulent-elles le climat ? Merci !", "fr")
        == "Les forêts régulent-elles le climat ?"
    )
    # nothing but noise: the text is kept rather than emptied
    assert denoise("Hi! Thanks!") == "Thanks!"


def test_recovered_share():
    assert recovered_share(0.8, 0.6, 0.75) == pytest.approx(0.75)
    assert recovered_share(0.8, 0.6, 0.8) == pytest.approx(1.0)
    assert np.isnan(recovered_share(0.8, 0.8, 0.9))
    np.testing.assert_allclose(
        recovered_share(np.array([1.0, 0.5]), np.array([0.5, 0.5]), np.array([0.75, 0.4])),
        [0.5, np.nan],
    )


def test_prompt_rewriter_hook():
    prompts = []

    def complete(prompt):
        prompts.append(prompt)
        return '1. "Can forests regulate the climate?"\n'

    rewrite = prompt_rewriter(complete)
    assert rewrite("Hi! " + CORE) == CORE
    assert "Hi! " + CORE in prompts[0]
    assert prompt_rewriter(lambda p: "")("anything") is None


# ----------------------------------------------------------------------------- cosine view


def test_noise_similarity_frame_and_summary():
    emb = BagOfWordsEmbedder()
    queries = ["binary search in sorted lists", "parse command line options", "zip archives"]
    refs = ["search a sorted list by bisection", "command line option parser", "read zip files"]
    frame = noise_similarity(emb, queries, refs, language="en", seed=0, rewrite=denoise)
    assert len(frame) == 3 * 5
    assert emb.n_calls == 2  # one call per kind
    lvl0 = frame[frame["level"] == 0]
    np.testing.assert_allclose(lvl0["cos_clean"], 1.0, atol=1e-6)
    assert (frame["restored"]).all()
    # restored text: same cosine as the clean query
    for level in LEVELS:
        part = frame[frame["level"] == level]
        np.testing.assert_allclose(
            part["cos_reference_rewritten"].to_numpy(), lvl0["cos_reference"].to_numpy(), atol=1e-6
        )
    summary = noise_summary(frame).set_index("level")
    assert list(summary.index) == list(LEVELS)
    assert summary.loc[0, "drop"] == 0 and summary.loc[0, "drop_pct"] == 0
    expected = frame.groupby("level")["cos_reference"].mean()
    np.testing.assert_allclose(summary["cos_reference"], expected)
    np.testing.assert_allclose(summary["drop"], expected - expected[0])
    np.testing.assert_allclose(summary["drop_pct"], 100 * (expected - expected[0]) / expected[0])
    assert summary.loc[4, "drop"] < 0  # noise words dilute the bag
    assert summary.loc[4, "recovered_share"] == pytest.approx(1.0)
    assert summary["n_chars"].is_monotonic_increasing


def test_noise_similarity_inputs():
    emb = BagOfWordsEmbedder()
    q = pd.DataFrame({"query_id": ["a", "b"], "text": ["alpha beta", "gamma delta"]})
    frame = noise_similarity(emb, q, {"b": "gamma", "a": "alpha"}, levels=[0, 2], language="fr")
    assert set(frame["query_id"]) == {"a", "b"} and set(frame["level"]) == {0, 2}
    assert "rewritten" not in frame.columns
    with pytest.raises(InputError, match="reference"):
        noise_similarity(emb, q, {"a": "alpha"})
    with pytest.raises(InputError, match="one per query"):
        noise_similarity(emb, q, ["alpha"])
    with pytest.raises(InputError, match="level"):
        noise_similarity(emb, q, ["a", "b"], levels=[7])


# ----------------------------------------------------------------------------- retrieval view


@pytest.fixture(scope="module")
def small(pydocs):
    return subset_dataset(pydocs, n_queries=15, max_docs=300, seed=0)


def test_subset_dataset(small, pydocs):
    assert len(small.judged_queries) == 15
    assert len(small.corpus) <= 300 + len(small.qrels)
    assert set(small.qrels["doc_id"]) <= set(small.corpus["doc_id"])
    assert set(small.corpus["doc_id"]) <= set(pydocs.corpus["doc_id"])


def test_noise_retrieval_impact_bm25(small):
    impact = noise_retrieval_impact(
        BM25Retriever(), small, language="en", seed=0, rewrite=denoise, n_resamples=500
    )
    t = impact.table.set_index(["level", "condition", "measure"])
    assert set(t.index.get_level_values("measure")) == {
        "nDCG@10",
        "R@10",
        "overlap@10",
        "kendall_tau@10",
    }
    # level 0 against itself
    assert t.loc[(0, "noisy", "nDCG@10"), "delta"] == 0
    assert t.loc[(0, "noisy", "overlap@10"), "value"] == pytest.approx(1.0)
    assert t.loc[(0, "noisy", "kendall_tau@10"), "value"] == pytest.approx(1.0)
    for level in LEVELS:
        row = t.loc[(level, "noisy", "nDCG@10")]
        assert row["ci_low"] <= row["delta"] <= row["ci_high"]
        assert row["n_queries"] == 15
        # the denoiser restores every query here, so its runs equal the clean run
        rw = t.loc[(level, "rewritten", "nDCG@10")]
        assert rw["value"] == pytest.approx(t.loc[(0, "noisy", "nDCG@10"), "value"])
        if level > 0 and row["delta"] != 0:
            assert rw["recovered_share"] == pytest.approx(1.0)
    # noise reshuffles the top 10 more as it grows
    overlap = [t.loc[(lv, "noisy", "overlap@10"), "value"] for lv in LEVELS]
    assert overlap[4] < 1.0 and overlap[4] <= overlap[1] + 1e-9
    assert set(impact.runs) == {(lv, c) for lv in LEVELS for c in ("noisy", "rewritten")}
    q = impact.queries
    clean = q[(q["level"] == 0) & (q["condition"] == "noisy")]["text"].tolist()
    assert clean == small.judged_queries["text"].str.strip().tolist()


def test_noise_retrieval_impact_accepts_a_factory(small):
    impact = noise_retrieval_impact(
        BM25Retriever, small, levels=[2], k=5, n_resamples=200, language="fr"
    )
    assert set(impact.table["level"]) == {0, 2}  # level 0 is always run
    assert set(impact.table["measure"]) == {"nDCG@5", "R@5", "overlap@5", "kendall_tau@5"}


# ----------------------------------------------------------------------------- real model


def test_noise_similarity_minilm_small(tmp_path, pydocs):
    from ragnb.embed import make_embedder

    emb = make_embedder(cache_dir=tmp_path, progress=False)
    refs = reference_passages(pydocs)
    queries = pydocs.queries[pydocs.queries["query_id"].isin(list(refs)[:12])]
    frame = noise_similarity(
        emb, queries, refs, levels=[0, 2, 4], seed=0, rewrite=partial(denoise, language="en")
    )
    summary = noise_summary(frame).set_index("level")
    assert summary.loc[4, "cos_reference"] < summary.loc[0, "cos_reference"]
    assert summary.loc[4, "cos_clean"] < summary.loc[2, "cos_clean"] < 1.0
    assert summary.loc[4, "recovered_share"] == pytest.approx(1.0)
