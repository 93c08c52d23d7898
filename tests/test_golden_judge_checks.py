"""Notebook 02's judge checks on a built golden set: self-consistency beside agreement with
human labels, the bias slopes and the position test, their cost check, and the study's tables
and sections (a judge that does not sample is skipped with the reason)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
from test_golden import PYDOCS, CountingJudge, build, tiny_config

from ragnb.core.cache import Cache
from ragnb.io.files import read_beir
from ragnb.judge import NoisyJudge, OpenAIJudge, QrelsJudge, SelfConsistentJudge, self_agreement
from ragnb.llm.ledger import BudgetExceededError
from ragnb.studies import golden
from ragnb.studies.golden import GoldenSetConfig
from ragnb.studies.golden.human import HumanLabels
from ragnb.studies.golden.judge_checks import judge_audit_for, self_consistency_for


@pytest.fixture(scope="module")
def pydocs():
    return read_beir(PYDOCS)


@pytest.fixture(scope="module")
def five(pydocs):
    return pydocs.judged_queries.head(5)


def human_of(data) -> HumanLabels:
    return HumanLabels(data.qrels[["query_id", "doc_id", "relevance"]], "the dataset's labels")


def test_labels_agree_with_themselves_and_with_people(pydocs, five):
    gs = build(pydocs, five, QrelsJudge(pydocs.qrels, missing=0), depth=5, min_pool=5).run()
    out = self_consistency_for(gs, human_of(pydocs))
    table = out.table.set_index("rater")
    assert list(table.index) == ["samples with each other", "sample 0", "sample 1", "sample 2"] + [
        "majority of 3"
    ]
    assert (table["kappa"] == 1.0).all() and (table["exact agreement"] == 1.0).all()
    assert table.loc["samples with each other", "against"] == "itself"
    assert table.loc["samples with each other", "n_pairs"] == len(gs.candidates)


def test_noisy_samples_disagree_and_the_table_is_self_agreement(pydocs, five):
    judge = NoisyJudge(pydocs.qrels, sd=1.0, seed=2, missing=0)
    gs = build(pydocs, five, judge, depth=5, min_pool=5).run()
    out = self_consistency_for(gs)
    own = out.table.iloc[0]
    assert own["kappa"] < 1.0 and len(out.table) == 1  # no human labels: one row
    direct = SelfConsistentJudge(judge, samples=3).grade_members(
        out.grades[["query_id", "doc_id"]].to_dict("records")
    )
    expected = self_agreement(direct, labels=[0, 1]).set_index("statistic")["value"]
    assert own["kappa"] == pytest.approx(expected["kappa"])
    assert own["alpha (ordinal)"] == pytest.approx(expected["alpha (ordinal)"])
    assert list(out.grades.columns) == [
        "query_id",
        "doc_id",
        "sample 0",
        "sample 1",
        "sample 2",
        "ensemble",
    ]


def test_audit_slopes_and_one_position_batch_per_query(pydocs, five):
    counting = CountingJudge(NoisyJudge(pydocs.qrels, sd=0.5, missing=0))
    gs = build(pydocs, five, counting, depth=5, min_pool=5).run()
    ranked = counting.ranked
    audit = judge_audit_for(gs, human_of(pydocs))
    assert list(audit.slopes["target"]) == ["grade", "grade", "grade - human", "grade - human"]
    per_target = audit.slopes.groupby("target")["n_pairs"].max()
    assert per_target["grade"] == len(gs.candidates)
    assert 0 < per_target["grade - human"] < len(gs.candidates)  # the labelled pairs only
    assert counting.ranked - ranked == 5 * 3  # original, reversed, one shuffle per query
    assert audit.position is not None and audit.position.n_batches == 5
    assert set(audit.position.ranks.groupby("query_id")["doc_id"].nunique()) == {5}


def test_checks_are_priced_before_any_call(pydocs, five, tmp_path):
    gs = build(pydocs, five, QrelsJudge(pydocs.qrels, missing=0), depth=5, min_pool=5).run()
    llm = OpenAIJudge(
        "gpt-4o-mini",
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-none",
        cache=Cache(tmp_path),
        progress=False,
    )
    broke = dataclasses.replace(gs, build=dataclasses.replace(gs.build, judge=llm, budget_usd=0.0))
    with pytest.raises(BudgetExceededError):
        self_consistency_for(broke)
    with pytest.raises(BudgetExceededError):
        judge_audit_for(broke)
    assert llm.ledger.frame().empty  # nothing was sent


def test_study_shows_the_checks_and_skips_a_judge_that_does_not_sample(tmp_path):
    data = read_beir(PYDOCS)
    config = tiny_config(tmp_path, max_queries=3)
    result = golden.run(
        config, dataset=data, judge=CountingJudge(QrelsJudge(data.qrels, missing=0))
    )
    assert "**Self-consistency skipped** because the judge does not draw samples" in (
        result.banner()
    )
    tables = result.tables()
    assert "self_consistency" not in tables
    assert isinstance(tables["bias_slopes"], pd.DataFrame) and "position_changes" in tables
    assert "**Bias audit**" in result.section("judge_audit")
    assert "Only 3 queries" in result.section("judge_audit")

    off = golden.run(
        dataclasses.replace(config, consistency_samples=0, judge_audit=False),
        dataset=data,
        judge=NoisyJudge(data.qrels, missing=0),
    )
    assert "**Self-consistency skipped** because `consistency_samples=0`." in off.banner()
    assert "**Judge bias audit skipped** because `judge_audit=False`." in off.banner()
    assert "bias_slopes" not in off.tables()


def test_config_refuses_one_sample_and_a_zero_temperature():
    from ragnb.errors import InputError

    with pytest.raises(InputError, match="consistency_samples"):
        GoldenSetConfig(consistency_samples=1)
    with pytest.raises(InputError, match="consistency_temperature"):
        GoldenSetConfig(consistency_temperature=0.0)
