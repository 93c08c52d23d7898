"""The judge audit: slopes of grades and of judge-minus-human errors against passage length and
query-term overlap (bootstrap intervals over queries), and the position test of listwise judges
(reversed and shuffled orders)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ragnb.errors import InputError
from ragnb.judge import (
    Judge,
    NoisyJudge,
    QrelsJudge,
    bias_audit,
    passage_features,
    position_audit,
)


def graded(n_queries: int = 30, per_query: int = 8, length_effect: float = 0.0, seed: int = 0):
    """Pairs with a human label, a passage length unrelated to it, and a judge grade equal to
    the label plus ``length_effect`` grades per 100 words plus noise."""
    rng = np.random.default_rng(seed)
    rows, human = [], []
    for q in range(n_queries):
        for d in range(per_query):
            label = int(rng.integers(0, 4))
            words = int(rng.integers(10, 400))
            passage = " ".join(["alpha"] * (words // 2) + ["zeta"] * (words - words // 2))
            grade = label + length_effect * words / 100 + rng.normal(0, 0.3)
            rows.append((f"q{q}", f"d{d}", "alpha beta", passage, round(grade)))
            human.append((f"q{q}", f"d{d}", label))
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "query", "passage", "grade"])
    qrels = pd.DataFrame(human, columns=["query_id", "doc_id", "relevance"])
    return frame, qrels


def test_features_count_words_and_the_share_of_query_terms():
    f = passage_features(
        pd.DataFrame(
            {
                "query": ["What is BM25?", "BM25 ranking", "!!"],
                "passage": ["bm25 is a function", "nothing here", "x"],
            }
        )
    )
    assert f["words"].tolist() == [4.0, 2.0, 1.0]
    assert f["overlap"].iloc[0] == pytest.approx(2 / 3)  # "is", "bm25" of what/is/bm25
    assert f["overlap"].iloc[1] == 0.0 and math.isnan(f["overlap"].iloc[2])


def test_a_length_biased_judge_shows_a_positive_error_slope_with_an_interval():
    frame, qrels = graded(length_effect=0.5)
    out = bias_audit(frame, human=qrels, n_boot=400).set_index(["target", "feature"])
    err = out.loc[("grade - human", "words")]
    assert err["slope"] == pytest.approx(0.5, abs=0.1)
    assert 0 < err["low"] < err["slope"] < err["high"]
    assert err["n_queries"] == 30 and err["n_pairs"] == 240 and err["n_boot"] == 400
    assert out.loc[("grade", "words"), "unit"] == "grade per 100 words"


def test_an_unbiased_judge_has_an_error_slope_interval_around_zero():
    frame, qrels = graded(length_effect=0.0, seed=3)
    out = bias_audit(frame, human=qrels, n_boot=400).set_index(["target", "feature"])
    err = out.loc[("grade - human", "words")]
    assert err["low"] < 0 < err["high"]
    # overlap does not vary (every passage holds "alpha" of "alpha beta"): undefined
    assert math.isnan(out.loc[("grade", "overlap"), "slope"])


def test_slope_is_the_least_squares_slope_and_invalid_rows_are_left_out():
    frame, _ = graded(n_queries=5, seed=1)
    frame.loc[0, "grade"] = 99
    frame["valid"] = True
    frame.loc[0, "valid"] = False
    out = bias_audit(frame, n_boot=0).set_index(["target", "feature"])
    kept = passage_features(frame.iloc[1:])
    expected = np.polyfit(kept["words"] / 100, kept["grade"].astype(float), 1)[0]
    assert out.loc[("grade", "words"), "slope"] == pytest.approx(expected)
    assert math.isnan(out.loc[("grade", "words"), "low"])
    assert ("grade - human", "words") not in out.index


def test_bad_input_names_the_column_or_setting():
    frame, _ = graded(n_queries=2)
    with pytest.raises(InputError, match="passage"):
        bias_audit(frame.drop(columns="passage"))
    with pytest.raises(InputError, match="ci"):
        bias_audit(frame, ci=1.5)


class FollowsPosition(Judge):
    """A listwise judge that answers the input order itself."""

    judge_id = "follows-position"
    scale = (0, 1)

    def _grade_batch(self, requests, stage):
        raise NotImplementedError

    def _rank_batch(self, requests, stage):
        return [
            self._rank_result(r, tuple(range(len(r.doc_ids))), valid=True, status="ok")
            for r in requests
        ]


def batches(n: int = 6, k: int = 5) -> list[dict]:
    return [
        {
            "query_id": f"q{q}",
            "doc_ids": [f"d{d}" for d in range(k)],
            "query": "x",
            "passages": [f"p{d}" for d in range(k)],
        }
        for q in range(n)
    ]


def test_a_judge_that_follows_position_is_caught():
    out = position_audit(FollowsPosition(), batches(), shuffles=2, n_permutations=500)
    assert out.correlation == pytest.approx(1.0)
    assert out.p_value == pytest.approx(1 / 501)
    rev = out.summary.set_index("order").loc["reversed"]
    # reversing 5 passages moves them by |4 - 2i|: 4, 2, 0, 2, 4
    assert rev["mean_abs_rank_change"] == pytest.approx(12 / 5) and rev["n_batches"] == 6
    assert list(out.summary["order"]) == ["reversed", "shuffled 1", "shuffled 2"]
    assert out.n_batches == 6 and out.n_invalid == 0
    assert len(out.ranks) == 6 * 4 * 5


def test_a_judge_that_reads_only_the_passages_is_not():
    qrels = {f"q{q}": {f"d{d}": d for d in range(5)} for q in range(6)}
    out = position_audit(QrelsJudge(qrels), batches(), n_permutations=200)
    assert out.correlation == 0.0 and out.p_value == 1.0
    assert (out.summary["mean_abs_rank_change"] == 0).all()


def test_a_noisy_listwise_judge_moves_ranks_without_following_position():
    qrels = {f"q{q}": {f"d{d}": d % 3 for d in range(5)} for q in range(40)}
    judge = NoisyJudge(qrels, sd=1.0, seed=0)
    out = position_audit(judge, batches(40), shuffles=2, n_permutations=1000, seed=1)
    assert (out.summary["mean_abs_rank_change"] > 0).all()
    assert abs(out.correlation) < 0.2 and out.p_value > 0.01


def test_position_audit_refuses_bad_settings():
    with pytest.raises(InputError, match="shuffles"):
        position_audit(FollowsPosition(), batches(), shuffles=-1)
    with pytest.raises(InputError, match="doc_ids"):
        position_audit(FollowsPosition(), [{"query_id": "q"}])
