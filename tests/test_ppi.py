"""ragnb.ppi: PPI / PPI++ means, per-system estimates, coverage on the real graded subsets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from ragnb import ppi
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.io.files import read_beir
from ragnb.judge import NoisyJudge
from ragnb.retrievers.retrieve import BM25Retriever

T = sps.t.ppf  # Student quantile


# --------------------------------------------------------------------------------------------
# the mean estimators, by hand


Y = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
YH = np.array([1.0, 1.0, 1.0, 0.0, 0.0, 1.0])
YU = np.array([1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0])


def test_ppi_with_lambda_one_is_judge_mean_plus_rectifier():
    est = ppi.ppi_mean(Y, YH, YU, power_tuning=False)
    # mean(yhat_u) = 6/8; mean(y - yhat) = (0 - 1 + 0 + 1 + 0 + 0) / 6 = 0
    assert est.point == pytest.approx(0.75 + 0.0)
    se = np.sqrt(np.var(YU, ddof=1) / 8 + np.var(Y - YH, ddof=1) / 6)
    assert est.se == pytest.approx(se)
    half = T(0.975, 6 - 1) * se
    assert (est.ci_low, est.ci_high) == pytest.approx((0.75 - half, 0.75 + half))
    assert est.lam == 1.0 and est.method == "ppi" and (est.n, est.N) == (6, 8)
    assert est.ci_low < est.point < est.ci_high


def test_ppi_plus_plus_lambda_formula():
    # ADZ23, mean: lam = Cov(y, yhat) / (Var_l(yhat) + (n/N) Var_u(yhat)), clipped to [0, 1]
    y = np.array([0.2, 0.5, 0.9, 0.4, 0.7])
    yh = np.array([0.1, 0.7, 0.8, 0.2, 0.9])
    yu = np.array([0.3, 0.6, 0.2, 0.9, 0.5, 0.4, 0.8])
    n, N = y.size, yu.size
    lam = np.cov(y, yh)[0, 1] / (np.var(yh, ddof=1) + n / N * np.var(yu, ddof=1))
    assert 0 < lam < 1
    est = ppi.ppi_mean(y, yh, yu, crossfit=False)
    assert est.lam == pytest.approx(lam)
    assert est.point == pytest.approx(lam * yu.mean() + (y - lam * yh).mean())
    se = np.sqrt(np.var(y - lam * yh, ddof=1) / n + lam**2 * np.var(yu, ddof=1) / N)
    assert est.se == pytest.approx(se)
    assert est.method == "ppi++" and est.ci_low < est.point < est.ci_high


def test_lambda_zero_is_the_classical_mean():
    a = ppi.ppi_mean(Y, YH, YU, lam=0.0)
    b = ppi.classical_mean(Y)
    assert (a.point, a.se, a.ci_low) == pytest.approx((b.point, b.se, b.ci_low))
    assert b.point == pytest.approx(4 / 6) and b.se == pytest.approx(np.std(Y, ddof=1) / 6**0.5)
    assert ppi.judge_mean(YH, YU) == pytest.approx(10 / 14)


def test_finite_population_correction_and_labels_to_halve():
    rng = np.random.default_rng(0)
    y = rng.normal(size=30)
    est = ppi.classical_mean(y, n_unlabelled=70, population="finite")
    assert est.se == pytest.approx(np.sqrt((1 - 30 / 100) * np.var(y, ddof=1) / 30))
    # Halving sqrt((1/n - 1/N) s^2): n' = 4 n N / (N + 3 n) = 12000 / 190 = 63.2 -> 34 more
    assert est.labels_to_halve == 34
    inf = ppi.classical_mean(y)
    assert inf.labels_to_halve == 90  # 3 n without a finite population


def test_stratified_estimator_by_hand():
    # Stratum a: N = 4, labelled 2; stratum b: N = 6, labelled 3 (weights = N_h / n_h).
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    strata = np.array(["a", "a", "b", "b", "b"])
    w = np.array([2.0, 2.0, 2.0, 2.0, 2.0])
    est = ppi.classical_mean(y, weights=w, strata=strata, n_unlabelled=5, population="finite")
    assert est.point == pytest.approx(0.4 * 0.5 + 0.6 * 2 / 3)
    var = 0.4**2 * (1 - 2 / 4) * 0.5 / 2 + 0.6**2 * (1 - 3 / 6) * (1 / 3) / 3
    assert est.se == pytest.approx(np.sqrt(var))
    with pytest.raises(InputError, match="unequal weights"):
        ppi.classical_mean(
            y, weights=[2, 3, 2, 2, 2], strata=strata, n_unlabelled=5, population="finite"
        )
    with pytest.raises(InputError, match="differ from the population size"):
        ppi.classical_mean(y, weights=w, strata=strata, n_unlabelled=9, population="finite")


def test_perfect_judge_shrinks_the_interval():
    rng = np.random.default_rng(1)
    truth = rng.normal(size=2000)
    y, yu = truth[:100], truth[100:]
    est = ppi.ppi_mean(y, y + 0.3, yu + 0.3)  # a biased but perfectly correlated judge
    hum = ppi.classical_mean(y)
    assert est.lam > 0.9  # C / (V + D): 1 / (1 + n/N) for a perfect judge, N = 1900
    assert est.width < 0.3 * hum.width
    assert est.ci_low <= truth.mean() <= est.ci_high


def test_useless_judge_costs_little_with_power_tuning():
    rng = np.random.default_rng(2)
    widths, plain = [], []
    for _ in range(50):
        y = rng.normal(size=200)
        yh, yu = rng.normal(size=200), rng.normal(size=5000)
        hum = ppi.classical_mean(y).width
        widths.append(ppi.ppi_mean(y, yh, yu).width / hum)
        plain.append(ppi.ppi_mean(y, yh, yu, power_tuning=False).width / hum)
    assert np.mean(widths) < 1.08  # PPI++: lam ~ 0
    assert np.mean(plain) > 1.3  # PPI with lam = 1 pays the judge's variance


def test_bad_arguments():
    with pytest.raises(InputError, match="at least 2 labelled"):
        ppi.ppi_mean([1.0], [1.0], [0.0, 1.0])
    with pytest.raises(InputError, match="yhat_labelled"):
        ppi.ppi_mean([1.0, 0.0], [1.0], [0.0, 1.0])
    with pytest.raises(InputError, match="NaN"):
        ppi.ppi_mean([1.0, np.nan], [1.0, 0.0], [0.0, 1.0])
    with pytest.raises(InputError, match="alpha"):
        ppi.classical_mean([1.0, 0.0], alpha=1.5)
    with pytest.raises(InputError, match="positive"):
        ppi.classical_mean([1.0, 0.0], weights=[1.0, 0.0])


# --------------------------------------------------------------------------------------------
# measures as units


QRELS = pd.DataFrame(
    {
        "query_id": ["q1", "q1", "q1", "q2", "q2", "q3", "q3", "q4", "q4", "q4"],
        "doc_id": ["a", "b", "c", "a", "d", "e", "f", "g", "h", "a"],
        "relevance": [2, 0, 1, 1, 0, 0, 2, 1, 1, 0],
    }
)


def _simulated_judge(qrels: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The lenient simulated judge of the PPI simulation (its default confusion)."""
    judge = NoisyJudge(qrels, noise="confusion", stream="calls", seed=seed)
    return judge.noisy_qrels()


RUN = pd.DataFrame(
    {
        "query_id": ["q1"] * 3 + ["q2"] * 2 + ["q3"] * 2 + ["q4"] * 3,
        "doc_id": ["a", "b", "c", "d", "a", "e", "f", "h", "a", "g"],
        "score": [3.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 3.0, 2.0, 1.0],
    }
)


def test_pair_unit_refuses_measures_not_linear_in_labels():
    for name in ("nDCG@10", "RR", "R@10"):
        with pytest.raises(InputError, match=rf"{name.replace('@', '@')}.*unit='pair'"):
            ppi.ppi_system_estimates(QRELS, QRELS, {"s": RUN}, [name], unit="pair")
    with pytest.raises(InputError, match="not linear in per-pair labels"):
        ppi.pair_contributions(QRELS, {"s": RUN}, "nDCG@3")


def test_pair_contributions_reproduce_evaluate():
    c = ppi.pair_contributions(QRELS, {"s": RUN}, ["P@2", "nDCG@3"], ndcg_ideal="judge")
    grades = c.merge(QRELS, on=["query_id", "doc_id"], how="left")["relevance"].fillna(0)
    thr = c["threshold"].to_numpy()
    g = np.where(np.isnan(thr), np.maximum(grades, 0), grades >= np.nan_to_num(thr))
    totals = (c["weight"] * g).groupby(c["measure"]).sum()
    # The judge is the truth here, so the judge's ideal is trec_eval's and nDCG is exact.
    ref = evaluate(QRELS, RUN, ["P@2", "nDCG@3"]).aggregate_to_dict()
    assert totals["P@2"] == pytest.approx(ref["P@2"])
    assert totals["nDCG@3[judge ideal]"] == pytest.approx(ref["nDCG@3"])


@pytest.mark.parametrize("unit", ["query", "pair"])
def test_biased_but_exact_judge_gives_the_truth(unit):
    judge = QRELS.copy()
    measures = ["P@2"] if unit == "pair" else ["P@2", "nDCG@3"]
    human = QRELS[QRELS["query_id"].isin(["q1", "q2", "q3"])]
    if unit == "pair":
        human = QRELS.iloc[[0, 1, 2, 3, 4, 6, 7]]
    out = ppi.ppi_system_estimates(judge, human, {"s": RUN}, measures, unit=unit)
    ref = evaluate(QRELS, RUN, measures).aggregate_to_dict()
    for row in out.itertuples():
        assert row.ppi == pytest.approx(ref[row.measure])
        assert row.ppi_ci_high - row.ppi_ci_low == pytest.approx(0.0, abs=1e-12)
        assert row.judge_only == pytest.approx(ref[row.measure])
        assert row.human_ci_low <= row.human_only <= row.human_ci_high
    assert set(out.columns) >= {"labels_to_halve", "width_ratio", "n_labelled", "n_total"}


def test_query_unit_with_inclusion_table():
    judge = _simulated_judge(QRELS, seed=3)
    human = QRELS[QRELS["query_id"].isin(["q1", "q2", "q4"])]
    table = pd.DataFrame({"query_id": ["q1", "q2", "q4"], "inclusion_probability": 0.75})
    out = ppi.ppi_system_estimates(judge, human, {"s": RUN}, ["P@2"], inclusion=table)
    assert out.loc[0, "n_labelled"] == 3 and out.loc[0, "n_total"] == 4
    short = table.iloc[:2]
    with pytest.raises(InputError, match="no inclusion probability"):
        ppi.ppi_system_estimates(judge, human, {"s": RUN}, ["P@2"], inclusion=short)


# --------------------------------------------------------------------------------------------
# coverage by simulation on the real graded subsets


def _systems(path) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    ds = read_beir(path)
    queries = ds.queries[ds.queries["query_id"].isin(ds.qrels["query_id"])]
    runs = {
        "bm25": BM25Retriever().index(ds.corpus).retrieve(queries, k=10),
        "bm25-nostem": BM25Retriever(stemmer=None, stopwords=None)
        .index(ds.corpus)
        .retrieve(queries, k=10),
    }
    return ds.qrels, runs


@pytest.mark.parametrize(
    ("fixture", "precision"),
    [("msmarco_path", "P(rel=2)@10"), ("dbpedia_path", "P@10")],
)
def test_coverage_on_real_subsets(request, fixture, precision):
    qrels, runs = _systems(request.getfixturevalue(fixture))
    sim = ppi.coverage_simulation(
        qrels, runs, [precision, "nDCG@10"], ndcg_ideal="judge", n_draws=400, seed=7
    )
    assert set(sim["n"]) == {50, 100, 200, 400}
    cov = sim.groupby("method")["coverage"].mean()
    assert cov["human"] >= 0.93 and cov["ppi"] >= 0.93 and cov["ppi++"] >= 0.93
    # no cell (system, measure, n) far below nominal
    assert sim["coverage"].min() >= 0.88
    width = sim.pivot_table(index=["system", "measure", "n"], columns="method", values="mean_width")
    assert (width["ppi++"] < width["human"]).mean() >= 0.9
    assert width["ppi++"].mean() < 0.9 * width["human"].mean()
    # the simulated judge is lenient: judge-only estimates are biased upwards
    first = sim.drop_duplicates(["system", "measure"])
    assert (first["judge_only"] > first["truth"]).all()


# --------------------------------------------------------------------------------------------
# labels for a target interval width


def _ppi_width(y_all, yh_all, lab, alpha=0.05):
    from ragnb.ppi.means import make_design, ppi_estimate

    design = make_design(lab.size, y_all.size - lab.size, None, None, "finite")
    mo = ppi_estimate(
        y_all[lab][None], yh_all[lab][None], np.array([yh_all.mean()]), np.zeros(1), design, None
    )
    return mo, 2 * float(mo.half_width(alpha)[0])


def test_labels_for_width_reach_the_width_and_halving_is_its_special_case():
    rng = np.random.default_rng(4)
    y_all = (rng.random(4000) < 0.4).astype(float)
    flip = rng.random(4000) < 0.3
    yh_all = np.where(flip, 1 - y_all, y_all)
    lab = rng.choice(4000, 100, replace=False)
    mo, width = _ppi_width(y_all, yh_all, lab)
    assert mo.labels_for_width(width / 2, 0.05)[0] == mo.labels_to_halve[0]
    assert mo.labels_for_width(width * 1.01, 0.05)[0] == 0  # already that narrow
    target = width / 3
    more = int(mo.labels_for_width(target, 0.05)[0])
    # the formula's answer, drawn afresh 30 times: the widths average out near the target
    widths = [
        _ppi_width(y_all, yh_all, rng.choice(4000, 100 + more, replace=False))[1] for _ in range(30)
    ]
    assert 100 * 7 < 100 + more < 100 * 9  # about 3^2 = 9 times the labels, fewer with the fpc
    assert np.mean(widths) == pytest.approx(target, rel=0.05)


def test_system_estimates_give_labels_for_a_target_width():
    judge = _simulated_judge(QRELS, seed=3)
    human = QRELS[QRELS["query_id"].isin(["q1", "q2", "q3"])]
    out = ppi.ppi_system_estimates(judge, human, {"s": RUN}, ["P@2"], target_width=0.01)
    assert "labels_for_width" in out.columns and out["labels_for_width"].iloc[0] >= 0
    assert "labels_for_width" not in ppi.ppi_system_estimates(judge, human, {"s": RUN}, ["P@2"])
    with pytest.raises(InputError, match="target_width"):
        ppi.ppi_system_estimates(judge, human, {"s": RUN}, ["P@2"], target_width=0)
