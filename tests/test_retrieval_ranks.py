"""Notebook 01's study: the retriever kinds bm25-plain and dense:<model>, rank intervals, tie
groups and power under the comparison."""

from __future__ import annotations

import pytest

from ragnb import stats
from ragnb.errors import InputError
from ragnb.retrievers.retrieve import (
    BM25Retriever,
    DenseRetriever,
    check_retrievers,
    make_retriever,
)
from ragnb.studies.retrieval import RetrievalEvaluationConfig, run


def test_retriever_kinds() -> None:
    plain = make_retriever("bm25-plain")
    assert isinstance(plain, BM25Retriever) and plain.name == "bm25-plain"
    assert plain.describe()["stemmer"] is None
    dense = make_retriever("dense:wordllama", progress=False)
    assert isinstance(dense, DenseRetriever) and dense.name == "dense:wordllama"
    check_retrievers(["bm25", "bm25-plain", "dense", "dense:all-MiniLM-L6-v2", "hybrid"])
    for bad, message in (
        (["splade"], "unknown retriever 'splade'"),
        (["dense:"], "unknown retriever 'dense:'"),
        (["bm25", "bm25"], "repeat"),
        ([], "empty"),
    ):
        with pytest.raises(InputError, match=message):
            check_retrievers(bad)
    with pytest.raises(InputError, match="target_effect"):
        RetrievalEvaluationConfig(target_effect=0.0)
    with pytest.raises(InputError, match="target_power"):
        RetrievalEvaluationConfig(target_power=1.0)


def test_the_study_ranks_the_retrievers_with_intervals_and_power() -> None:
    config = RetrievalEvaluationConfig(
        retrievers=["bm25", "bm25-plain"],
        depth=10,
        cutoffs=[1, 5, 10],
        proc_pool=10,
        n_resamples=300,
        target_effect=0.05,
    )
    result = run(config, progress=False)
    ranks = result.ranks
    assert set(ranks["system"]) == {"bm25", "bm25-plain"}
    assert ranks["rank"].str.fullmatch(r"[12](-2)?").all()
    power = result.power_analysis
    assert list(power["pair"]) == ["bm25 − bm25-plain"]
    assert power["mde_t"].iloc[0] > 0 and power["queries_needed_t"].iloc[0] >= 2
    views = result.views()
    assert (
        "Tie groups" in views["ranking_note"] and "minimum detectable effect" in views["power_note"]
    )
    assert {"ranking", "power", "anova", "tukey_letters"} <= set(result.tables())
    # all systems at once: the ANOVA per measure and Tukey's letters, consistent with its pairs
    anova = views["anova"]
    assert list(anova.index) == list(result.significance.measures)
    assert (anova["design"] == "repeated-measures").all() and anova["p_value"].between(0, 1).all()
    assert "F(1, " in views["all_systems_note"]
    letters = views["tukey_letters"]
    assert list(letters.index) == ["bm25", "bm25-plain"]
    measure = result.significance.measures[0]
    shared = [set(cell.split()[1]) for cell in letters[measure]]
    p_tukey = stats.tukey_hsd(
        result.significance.per_query[result.significance.per_query["measure"] == measure].pivot(
            index="query_id", columns="system", values="value"
        )[["bm25", "bm25-plain"]]
    )["p_value"].iloc[0]
    assert bool(shared[0] & shared[1]) == (p_tukey > result.significance.settings["alpha"])
    assert {"cohens_dz", "hedges_gz", "gz_low"} <= set(result.significance.pairs.columns)
