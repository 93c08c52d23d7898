"""Judge calibration (confusion matrix, weighted kappa, system rankings) and SPEAR's pseudo
ground truth, on hand-computed examples, a naive reference on random inputs, and edge cases."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from openai_server import ChatAnswer

from ragnb.errors import InputError
from ragnb.golden.calibration import (
    LLMFactExtractor,
    agreement_pairs,
    calibrate,
    confusion_matrix,
    fact_recall,
    interpolated_pr,
    kendall_tau,
    minimal_facts,
    spear_evaluate,
    spear_pool,
    system_agreement,
    weighted_kappa,
)
from ragnb.measures import pr_auc

# ----------------------------------------------------------------------------- kappa

HUMAN = [0, 0, 1, 1, 2, 2]
JUDGE = [0, 1, 1, 1, 2, 0]


def test_weighted_kappa_hand_computed():
    # observed disagreement: (0,1) weight 1/2 and (2,0) weight 1, over 6 pairs; chance from the
    # marginals human (2,2,2)/6 and judge (2,3,1)/6: sum_ij w_ij r_i c_j = 15/36 (linear)
    assert weighted_kappa(HUMAN, JUDGE, weights="linear") == pytest.approx(
        1 - (1.5 / 6) / (15 / 36)
    )
    assert weighted_kappa(HUMAN, JUDGE, weights="linear") == pytest.approx(0.4)
    # quadratic: (1/4 + 1) / 6 against 10.5 / 36
    assert weighted_kappa(HUMAN, JUDGE, weights="quadratic") == pytest.approx(2 / 7)
    # unweighted: p_o = 4/6, p_e = (2*2 + 2*3 + 2*1)/36 = 1/3
    assert weighted_kappa(HUMAN, JUDGE, weights="none") == pytest.approx(0.5)
    assert weighted_kappa(HUMAN, HUMAN, weights="quadratic") == pytest.approx(1.0)
    # symmetric in the raters
    assert weighted_kappa(JUDGE, HUMAN) == pytest.approx(weighted_kappa(HUMAN, JUDGE))


def _naive_kappa(a, b, weights, labels):
    k = len(labels)
    n = len(a)
    pos = {c: i for i, c in enumerate(labels)}
    obs = np.zeros((k, k))
    for x, y in zip(a, b, strict=True):
        obs[pos[x], pos[y]] += 1 / n
    num = den = 0.0
    for i, j in itertools.product(range(k), repeat=2):
        if weights == "none":
            w = float(i != j)
        elif weights == "linear":
            w = abs(i - j) / (k - 1)
        else:
            w = (i - j) ** 2 / (k - 1) ** 2
        num += w * obs[i, j]
        den += w * obs[i, :].sum() * obs[:, j].sum()
    return 1 - num / den


@pytest.mark.parametrize("weights", ["none", "linear", "quadratic"])
def test_weighted_kappa_matches_a_naive_reference_on_random_grades(weights):
    rng = np.random.default_rng(0)
    for _ in range(30):
        n = int(rng.integers(5, 60))
        a = rng.integers(1, 6, n)
        b = np.clip(a + rng.integers(-2, 3, n), 1, 5)
        labels = list(range(1, 6))
        got = weighted_kappa(a, b, weights=weights, labels=labels)
        assert got == pytest.approx(_naive_kappa(a.tolist(), b.tolist(), weights, labels))


def test_weighted_kappa_edge_cases():
    # grade 3 unused: with the full scale, 2 -> 4 is two steps, not one like 1 -> 2
    a, b = [1, 2, 4, 2, 1], [2, 4, 4, 1, 1]
    assert weighted_kappa(a, b) != pytest.approx(weighted_kappa(a, b, labels=[1, 2, 3, 4]))
    assert weighted_kappa(a, b, labels=[1, 2, 3, 4]) == pytest.approx(
        _naive_kappa(a, b, "linear", [1, 2, 3, 4])
    )
    # both raters used one grade: chance explains everything
    assert math.isnan(weighted_kappa([1, 1, 1], [1, 1, 1]))
    assert math.isnan(weighted_kappa([], []))
    with pytest.raises(InputError, match="aligned"):
        weighted_kappa([1, 2], [1])
    with pytest.raises(InputError, match="not among labels"):
        weighted_kappa([1, 7], [1, 2], labels=[1, 2, 3])
    with pytest.raises(InputError, match="integer"):
        weighted_kappa([1.5, 2], [1, 2])
    with pytest.raises(InputError, match="weights"):
        weighted_kappa([1], [1], weights="cubic")


def test_confusion_matrix_hand_computed():
    m = confusion_matrix(HUMAN, JUDGE)
    wide = m.pivot(index="human", columns="judge", values="count")
    assert wide.to_numpy().tolist() == [[1, 1, 0], [0, 2, 0], [1, 0, 1]]
    assert m["count"].sum() == 6 and m["share"].sum() == pytest.approx(1.0)
    # the full scale lists unused grades with zero counts
    full = confusion_matrix(HUMAN, JUDGE, labels=[0, 1, 2, 3])
    assert len(full) == 16 and full.loc[full["human"] == 3, "count"].sum() == 0


# ----------------------------------------------------------------------------- system rankings


def test_kendall_tau_hand_computed_and_degenerate_cases():
    # only the pair (3rd, 4th) disagrees: (5 - 1) / 6
    assert kendall_tau([0.5, 0.4, 0.3, 0.2], [0.45, 0.42, 0.1, 0.3]).tau == pytest.approx(4 / 6)
    assert kendall_tau([1, 2, 3], [3, 2, 1]).tau == pytest.approx(-1.0)
    assert math.isnan(kendall_tau([1.0], [1.0]).tau)
    assert math.isnan(kendall_tau([1, 1, 1], [1, 2, 3]).tau)
    with pytest.raises(InputError):
        kendall_tau([1, 2], [1, 2, 3])


def test_system_agreement_by_hand():
    # q: the human says a relevant, b not; the judge the opposite
    human = {"q": {"a": 1, "b": 0}}
    judge = {"q": {"a": 0, "b": 1}}
    runs = {"s1": {"q": {"a": 2.0, "b": 1.0}}, "s2": {"q": {"b": 2.0, "a": 1.0}}}
    frame, tau = system_agreement(human, judge, runs, "P@1")
    assert frame.set_index("system")[["human", "judge"]].to_dict("index") == {
        "s1": {"human": 1.0, "judge": 0.0},
        "s2": {"human": 0.0, "judge": 1.0},
    }
    assert frame["rank_human"].tolist() == [1, 2] and frame["rank_judge"].tolist() == [2, 1]
    assert tau.tau == pytest.approx(-1.0) and tau.n == 2


def test_calibrate_uses_only_the_pairs_both_labelled():
    human = pd.DataFrame({"query_id": ["q"] * 4, "doc_id": list("abcd"), "relevance": [2, 1, 0, 2]})
    judge = pd.DataFrame({"query_id": ["q"] * 4, "doc_id": list("abce"), "relevance": [2, 2, 0, 2]})
    pairs = agreement_pairs(human, judge)
    assert pairs[["doc_id", "human", "judge"]].values.tolist() == [
        ["a", 2, 2],
        ["b", 1, 2],
        ["c", 0, 0],
    ]
    runs = {"r": {"q": {"d": 3.0, "e": 2.0, "a": 1.0}}}  # d, e: labelled by one side only
    cal = calibrate(human, judge, runs, measure="P@3", labels=[0, 1, 2])
    stats = cal.agreement.set_index("statistic")["value"]
    assert stats["exact agreement"] == pytest.approx(2 / 3)
    assert stats["within one grade"] == pytest.approx(1.0)
    assert stats["pairs"] == 3
    assert cal.kappas()["linear"] == pytest.approx(
        weighted_kappa([2, 1, 0], [2, 2, 0], labels=[0, 1, 2])
    )
    # both measured on the shared pairs only: d (human only) and e (judge only, grade 2) count
    # as unjudged for both, so P@3 = 1/3 (a) under each, not 2/3 for the judge
    np.testing.assert_allclose(cal.systems[["human", "judge"]].to_numpy(), [[1 / 3, 1 / 3]])
    assert cal.matrix.loc[1, 2] == 1
    assert any("weak evidence" in n for n in cal.notes)
    summary = cal.summary()
    assert summary["pairs"] == 3 and summary["labels"] == [0, 1, 2]
    with pytest.raises(InputError, match="both"):
        calibrate({"q": {"a": 1}}, {"q": {"b": 1}})


def test_calibration_export(tmp_path):
    cal = calibrate({"q": {"a": 1, "b": 0}}, {"q": {"a": 1, "b": 1}}, {"s": {"q": {"a": 1.0}}})
    cal.export(tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {
        "pairs.csv",
        "confusion.csv",
        "agreement.csv",
        "systems.csv",
        "calibration.json",
    }


# ----------------------------------------------------------------------------- SPEAR

# Truth for q: a, b, c, z relevant, d, e not. s1 returns a, d, b; s2 returns c, e, x.
TRUTH = {"q": {"a": 1, "b": 1, "c": 1, "z": 1, "d": 0, "e": 0, "x": 0}}
JUDGED = {"q": {"a": 1, "b": 1, "c": 1, "d": 0, "e": 0, "x": 0}}  # the pool only: z unseen
RUNS = {"s1": {"q": {"a": 3.0, "d": 2.0, "b": 1.0}}, "s2": {"q": {"c": 3.0, "e": 2.0, "x": 1.0}}}


def test_spear_pool_is_the_union_of_the_top_k():
    pool = spear_pool(RUNS, k=2)
    assert pool[["doc_id", "systems", "best_rank"]].values.tolist() == [
        ["a", "s1", 1],
        ["c", "s2", 1],
        ["d", "s1", 2],
        ["e", "s2", 2],
    ]


def test_spear_precision_is_exact_and_recall_relative():
    s = spear_evaluate(JUDGED, RUNS, k=3).summary.set_index("system")
    # precision: the same as on the full truth
    assert s.loc["s1", "precision"] == pytest.approx(2 / 3)
    assert s.loc["s2", "precision"] == pytest.approx(1 / 3)
    # recall: TP / (P - FN_res) with P = 4 relevant, FN_res = 1 (z, found by nobody)
    assert s.loc["s1", "recall_relative"] == pytest.approx(2 / 3)  # true recall 2/4
    assert s.loc["s2", "recall_relative"] == pytest.approx(1 / 3)  # true recall 1/4
    # PR-AUC on the pseudo ground truth: s1 hits at ranks 1 and 3: (1 + 2/3) / 3
    assert s.loc["s1", "pr_auc"] == pytest.approx((1 + 2 / 3) / 3)
    assert s.loc["s1", "pr_auc"] == pytest.approx(pr_auc(TRUTH, RUNS["s1"]) * 4 / 3)
    assert (s["judged"] == 1.0).all()
    # the systems keep their order under the true labels
    true_recall = {"s1": 2 / 4, "s2": 1 / 4}
    assert (s["recall_relative"].rank() == pd.Series(true_recall).rank()).all()


def test_spear_curves_and_interpolation():
    res = spear_evaluate(JUDGED, RUNS, k=3)
    c = res.curves[res.curves["system"] == "s1"]
    np.testing.assert_allclose(
        c[["rank", "precision", "recall"]].to_numpy(dtype=float),
        [[1, 1.0, 1 / 3], [2, 0.5, 1 / 3], [3, 2 / 3, 2 / 3]],
    )
    ip = res.interpolated[res.interpolated["system"] == "s1"].set_index("recall")["precision"]
    # max precision at recall >= r: 1 up to 1/3, 2/3 up to 2/3, 0 beyond (never reached)
    assert ip[0.0] == pytest.approx(1.0) and ip[0.3] == pytest.approx(1.0)
    assert ip[0.4] == pytest.approx(2 / 3) and ip[0.6] == pytest.approx(2 / 3)
    assert ip[0.7] == 0.0 and ip[1.0] == 0.0
    # a curve with a query that has no relevant document contributes nothing
    curve = pd.DataFrame(
        {
            "query_id": ["q"],
            "rank": [1],
            "precision": [0.0],
            "recall": [np.nan],
            "relevant": [False],
        }
    )
    assert interpolated_pr(curve).empty


def test_minimal_facts_dedupe_across_chunks_and_fact_recall():
    # two segmentations hold the same fact ("BM25 uses k1"), told apart by case and a full stop
    relevant = pd.DataFrame(
        {
            "query_id": ["q", "q", "q"],
            "doc_id": ["A1", "B1", "B2"],
            "query": ["bm25"] * 3,
            "passage": ["noise. BM25 uses k1", "bm25 uses K1. more", "b controls length"],
        }
    )
    table = {
        "noise. BM25 uses k1": ["BM25 uses k1"],
        "bm25 uses K1. more": ["bm25 uses K1."],
        "b controls length": ["b controls length", "  "],
    }
    facts = minimal_facts(relevant, lambda q, p: table[p])
    assert facts[["doc_id", "fact_id"]].values.tolist() == [
        ["A1", "f1"],
        ["B1", "f1"],
        ["B2", "f2"],
    ]
    runs = {"A": {"q": {"A1": 1.0, "X": 0.5}}, "B": {"q": {"B1": 1.0, "B2": 0.5}}}
    rec = fact_recall(facts, runs, k=2).set_index("system")
    # chunk-level recall would give A 1/3 and B 2/3; fact level A 1/2 (f1), B 2/2
    assert rec.loc["A", "recall"] == pytest.approx(0.5) and rec.loc["B", "recall"] == 1.0
    assert rec.loc["B", "facts_found"] == 2 and rec.loc["B", "facts"] == 2
    assert minimal_facts(relevant, None).empty  # no client: skipped


def test_llm_fact_extractor_through_the_judge_client(openai_server, tmp_path):
    from ragnb.cache import Cache
    from ragnb.judge import OpenAIJudge
    from ragnb.ledger import Ledger

    def handler(request):
        user = request.json["messages"][-1]["content"]
        if "nothing useful" in user:
            return ChatAnswer("1. NONE")
        return ChatAnswer("1. BM25 uses k1\n2. b controls length normalisation")

    openai_server.chat.handler = handler
    judge = OpenAIJudge(
        "gpt-4o-mini",
        base_url=openai_server.base_url,
        api_key="sk-test",
        cache=Cache(tmp_path / "cache"),
        ledger=Ledger(),
        progress=False,
    )
    extractor = LLMFactExtractor(judge)
    got = extractor.many([("bm25?", "BM25 has k1 and b."), ("bm25?", "nothing useful here")])
    assert got == [["BM25 uses k1", "b controls length normalisation"], []]
    assert extractor("bm25?", "BM25 has k1 and b.") == got[0]  # from the cache
    assert openai_server.request_count("/v1/chat/completions") == 2
    assert set(judge.ledger.frame()["stage"]) == {"spear_facts"}
